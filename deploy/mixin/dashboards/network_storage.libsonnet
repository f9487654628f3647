// Network and storage (stack document): InfiniBand/RoCE ports, the NVLink fabric, the GPUs' PCIe links
// and the host's I/O and memory pressure (a starved data loader or checkpoint shows there first).
// InfiniBand and host series carry the scrape instance, not Hostname: c.onNode() joins the node name on.
local lib = import 'lib.libsonnet';

function(c)
  local s = c.sel.node;
  local n = c.nodeLabel;
  c.dashboard(
    c.uids.network,
    'gpuscope / Network and storage',
    'InfiniBand and RoCE ports, NVLink fabric, PCIe links, host I/O and memory pressure.',
    ['network', 'storage', 'infiniband', 'nvlink'],
    [c.variables.cluster, c.variables.node],
    [
      lib.row('InfiniBand / RoCE'),
      lib.timeseries('Port throughput (tx up, rx down)', [
        lib.target(c.onNode('sum by (instance, device, port) (rate(gpuscope_infiniband_port_data_transmitted_bytes_total{%s}[$__rate_interval]))' % c.sel.cluster), '{{%s}} {{device}}/{{port}} tx' % n),
        lib.target(c.onNode('sum by (instance, device, port) (rate(gpuscope_infiniband_port_data_received_bytes_total{%s}[$__rate_interval]))' % c.sel.cluster), '{{%s}} {{device}}/{{port}} rx' % n),
      ], unit='Bps', negativeY='.* rx'),
      lib.timeseries('Port utilisation of the link rate', [
        lib.target(c.onNode('max by (instance, device, port) (rate(gpuscope_infiniband_port_data_transmitted_bytes_total{%s}[$__rate_interval])) / max by (instance, device, port) (gpuscope_infiniband_port_rate_bytes_per_second{%s})' % [c.sel.cluster, c.sel.cluster]), '{{%s}} {{device}}/{{port}}' % n),
      ], unit='percentunit', min=0, max=1),
      lib.timeseries('Port errors', [
        // One rate() per counter: a regex over metric names in one rate() keeps no __name__, and the
        // counters of one port would collide ("vector cannot contain metrics with the same labelset").
        lib.target(c.onNode('sum by (instance, device, port) (%s)' % std.join(' or ', [
          'label_replace(rate(gpuscope_infiniband_port_%s_total{%s}[$__rate_interval]), "counter", "%s", "", "")' % [counter, c.sel.cluster, counter]
          for counter in ['symbol_errors', 'link_error_recoveries', 'link_downed', 'receive_errors', 'receive_remote_physical_errors', 'transmit_discards', 'local_link_integrity_errors', 'excessive_buffer_overrun_errors']
        ])), '{{%s}} {{device}}/{{port}}' % n),
      ], bars=true),
      lib.timeseries('Congestion: transmit wait', [
        lib.target(c.onNode('sum by (instance, device, port) (rate(gpuscope_infiniband_port_transmit_wait_total{%s}[$__rate_interval]))' % c.sel.cluster), '{{%s}} {{device}}/{{port}}' % n),
      ], description='Ticks with data to send and no flow-control credits: a congested fabric starves collectives.'),
      lib.table('Ports',
                [
                  lib.target(c.onNode('max by (instance, device, port, link_layer) (gpuscope_infiniband_port_state_id{%s})' % c.sel.cluster)),
                  lib.target(c.onNode('max by (instance, device, port, link_layer) (gpuscope_infiniband_port_rate_bytes_per_second{%s})' % c.sel.cluster)),
                  lib.target(c.onNode('max by (instance, device, port, link_layer) (gpuscope_infiniband_port_link_width_lanes{%s})' % c.sel.cluster)),
                ],
                hide=['Time', 'instance'],
                renames={ 'Value #A': 'State (4 = active)', 'Value #B': 'Rate', 'Value #C': 'Lanes' },
                units={ Rate: 'Bps' },
                w=24),

      lib.row('NVLink fabric'),
      lib.timeseries('NVLink bandwidth per node', [
        lib.target('sum by (%s) (rate(gpuscope_nvlink_data_bytes_total{%s}[$__rate_interval]))' % [n, s], '{{%s}}' % n),
      ], unit='Bps'),
      lib.timeseries('NVLink errors by counter', [
        lib.target('sum by (%s, counter) (%s{%s})' % [n, c.rec.nvlinkErrors, c.sel.aggNode], '{{%s}} {{counter}}' % n),
      ], bars=true),

      lib.row('PCIe'),
      lib.timeseries('PCIe throughput per node (tx up, rx down)', [
        lib.target('sum by (%s, direction) (gpuscope_gpu_pcie_bytes_per_second{%s})' % [n, s], '{{%s}} {{direction}}' % n),
      ], unit='Bps', negativeY='.* rx'),
      lib.timeseries('PCIe links degraded', [
        lib.target(c.onNode('sum by (instance) (gpuscope_gpu_pcie_link_degraded{%s})' % c.sel.cluster), '{{%s}} width' % n),
        lib.target('sum by (%s) (increase(DCGM_FI_DEV_PCIE_REPLAY_COUNTER{%s}[$__rate_interval]))' % [n, s], '{{%s}} replays' % n),
      ], bars=true, description='Links running narrower than both ends support, and PCIe replays.'),

      lib.row('Host pressure (storage and memory)'),
      lib.timeseries('I/O pressure (share of time stalled, 10 s average)', [
        lib.target(c.onNode('max by (instance, kind) (gpuscope_host_pressure_stalled_ratio{%s, resource="io", window="10s"})' % c.sel.cluster), '{{%s}} {{kind}}' % n),
      ], unit='percentunit', min=0, description='Tasks waiting on storage: slow data loading or checkpoint writes.'),
      lib.timeseries('Memory pressure (share of time stalled, 10 s average)', [
        lib.target(c.onNode('max by (instance, kind) (gpuscope_host_pressure_stalled_ratio{%s, resource="memory", window="10s"})' % c.sel.cluster), '{{%s}} {{kind}}' % n),
      ], unit='percentunit', min=0),
      lib.timeseries('GPU processes off their NUMA node', [
        lib.target(c.onNode('sum by (instance) (gpuscope_gpu_numa_misplaced_processes{%s})' % c.sel.cluster), '{{%s}}' % n),
      ], bars=true, w=24, description='Processes pinned or running away from the CPUs local to their GPU cross the inter-socket link for every host transfer.'),
    ],
  )
