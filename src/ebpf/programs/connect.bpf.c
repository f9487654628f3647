// Outbound TCP connects, IPv4 and IPv6: the BTF-typed raw tracepoint inet_sock_set_state (tp_btf: no
// tracefs, no kprobe), at the transition to TCP_SYN_SENT, which tcp_connect makes in the context of the
// process calling connect(2). The destination is read from the socket: skc_daddr for IPv4 and
// skc_v6_daddr for IPv6 (an IPv6 socket's skc_daddr holds nothing useful).
#include "common.bpf.h"

#define GPUSCOPE_AF_INET 2
#define GPUSCOPE_AF_INET6 10
#define GPUSCOPE_TCP_SYN_SENT 2

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(connect_syn_sent, const struct sock* sk, int oldstate, int newstate) {
  if (newstate != GPUSCOPE_TCP_SYN_SENT) return 0;
  __u16 family = BPF_CORE_READ(sk, __sk_common.skc_family);
  if (family != GPUSCOPE_AF_INET && family != GPUSCOPE_AF_INET6) return 0;
  struct gpuscope_connect_record* r = bpf_ringbuf_reserve(&records, sizeof(*r), 0);
  if (!r) {
    count_lost();
    return 0;
  }
  __builtin_memset(r, 0, sizeof(*r));
  r->kind = GPUSCOPE_RECORD_CONNECT;
  r->family = family;
  fill_task(&r->task);
  r->dport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
  r->sport = BPF_CORE_READ(sk, __sk_common.skc_num);
  if (family == GPUSCOPE_AF_INET) {
    __u32 daddr = BPF_CORE_READ(sk, __sk_common.skc_daddr);
    __u32 saddr = BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr);
    __builtin_memcpy(r->daddr, &daddr, 4);
    __builtin_memcpy(r->saddr, &saddr, 4);
  } else {
    BPF_CORE_READ_INTO(&r->daddr, sk, __sk_common.skc_v6_daddr.in6_u.u6_addr8);
    BPF_CORE_READ_INTO(&r->saddr, sk, __sk_common.skc_v6_rcv_saddr.in6_u.u6_addr8);
  }
  bpf_ringbuf_submit(r, 0);
  return 0;
}
