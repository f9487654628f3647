"""The remote_write encoders' output decoded by an independent decoder: Python's protobuf runtime with the
message schemas declared here from the upstream .proto files (prometheus/prometheus prompb/types.proto
for 1.0, prompb/io/prometheus/write/v2/types.proto for 2.0), not from our field numbers.

Usage: remote_write_decode_test.py DUMP_TOOL"""

import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tools"))
import unittest_main  # noqa: E402
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory  # noqa: E402

DUMP = sys.argv[1]
F = descriptor_pb2.FieldDescriptorProto
STALE_BITS = 0x7FF0000000000002


def field(name, number, kind, label=F.LABEL_OPTIONAL, type_name=None, packed=None):
    f = F(name=name, number=number, type=kind, label=label)
    if type_name:
        f.type_name = type_name
    if packed is not None:
        f.options.packed = packed
    return f


def message(name, *fields, enums=()):
    m = descriptor_pb2.DescriptorProto(name=name)
    m.field.extend(fields)
    for enum_name, values in enums:
        e = m.enum_type.add(name=enum_name)
        for value_name, number in values:
            e.value.add(name=value_name, number=number)
    return m


REP = F.LABEL_REPEATED
METRIC_TYPES = [("UNKNOWN", 0), ("COUNTER", 1), ("GAUGE", 2), ("HISTOGRAM", 3), ("GAUGEHISTOGRAM", 4),
                ("SUMMARY", 5), ("INFO", 6), ("STATESET", 7)]


def schemas():
    pool = descriptor_pool.DescriptorPool()
    v1 = descriptor_pb2.FileDescriptorProto(name="v1.proto", package="prometheus", syntax="proto3")
    v1.message_type.extend([
        message("WriteRequest", field("timeseries", 1, F.TYPE_MESSAGE, REP, ".prometheus.TimeSeries"),
                field("metadata", 3, F.TYPE_MESSAGE, REP, ".prometheus.MetricMetadata")),
        message("MetricMetadata", field("type", 1, F.TYPE_ENUM, type_name=".prometheus.MetricMetadata.MetricType"),
                field("metric_family_name", 2, F.TYPE_STRING), field("help", 4, F.TYPE_STRING),
                field("unit", 5, F.TYPE_STRING), enums=[("MetricType", METRIC_TYPES)]),
        message("Sample", field("value", 1, F.TYPE_DOUBLE), field("timestamp", 2, F.TYPE_INT64)),
        message("TimeSeries", field("labels", 1, F.TYPE_MESSAGE, REP, ".prometheus.Label"),
                field("samples", 2, F.TYPE_MESSAGE, REP, ".prometheus.Sample")),
        message("Label", field("name", 1, F.TYPE_STRING), field("value", 2, F.TYPE_STRING)),
    ])
    v2 = descriptor_pb2.FileDescriptorProto(name="v2.proto", package="io.prometheus.write.v2", syntax="proto3")
    p = ".io.prometheus.write.v2."
    v2.message_type.extend([
        message("Request", field("symbols", 4, F.TYPE_STRING, REP),
                field("timeseries", 5, F.TYPE_MESSAGE, REP, p + "TimeSeries")),
        message("TimeSeries", field("labels_refs", 1, F.TYPE_UINT32, REP, packed=True),
                field("samples", 2, F.TYPE_MESSAGE, REP, p + "Sample"),
                field("metadata", 5, F.TYPE_MESSAGE, type_name=p + "Metadata")),
        message("Sample", field("value", 1, F.TYPE_DOUBLE), field("timestamp", 2, F.TYPE_INT64),
                field("start_timestamp", 3, F.TYPE_INT64)),
        message("Metadata", field("type", 1, F.TYPE_ENUM, type_name=p + "Metadata.MetricType"),
                field("help_ref", 3, F.TYPE_UINT32), field("unit_ref", 4, F.TYPE_UINT32),
                enums=[("MetricType", [("METRIC_TYPE_" + n if n != "UNKNOWN" else "METRIC_TYPE_UNSPECIFIED", v)
                                       for n, v in METRIC_TYPES])]),
    ])
    pool.Add(v1)
    pool.Add(v2)
    return (message_factory.GetMessageClass(pool.FindMessageTypeByName("prometheus.WriteRequest")),
            message_factory.GetMessageClass(pool.FindMessageTypeByName("io.prometheus.write.v2.Request")))


TS = 1796150000123
MODEL = "NVIDIA H100 \u201c\u00fc\u201d"
EXPECTED = [  # (labels sorted by name, value, timestamp, start timestamp)
    ([("UUID", "GPU-0c59472a"), ("__name__", "DCGM_FI_DEV_GPU_TEMP"), ("gpu", "0"), ("modelName", MODEL)],
     41.5, TS, 0),
    ([("UUID", "GPU-7982f8e6"), ("__name__", "DCGM_FI_DEV_GPU_TEMP"), ("gpu", "1")], "stale", TS, 0),
    ([("__name__", "gpuscope_busy_seconds_total"), ("gpu", "0")], 1e300, TS, 1796149000000),
]
# The sink's path (the dump's second pair of files): the record of the second of two intervals, GPU 1
# gone in it, so its stale marker (without metadata) comes after the live series.
RECORD_EXPECTED = [
    (EXPECTED[0][0], 41.5, TS, 0),
    (EXPECTED[2][0], 1e300, TS, 0),
    (EXPECTED[1][0], "stale", TS, 0),
]
METADATA = {"DCGM_FI_DEV_GPU_TEMP": ("GAUGE", "GPU temperature (in \u00b0C).", ""),
            "gpuscope_busy_seconds_total": ("COUNTER", "Busy time.", "seconds")}


def bits(value):
    return struct.unpack("<Q", struct.pack("<d", value))[0]


class DecodedByPythonProtobuf(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="gpuscope-rw-decode-")
        paths = [os.path.join(cls.dir, name) for name in ("v1.bin", "v2.bin", "record-v1.bin", "record-v2.bin")]
        subprocess.run([DUMP, *paths], check=True)
        WriteRequest, Request = schemas()
        with open(paths[0], "rb") as f1, open(paths[1], "rb") as f2, open(paths[2], "rb") as f3, \
                open(paths[3], "rb") as f4:
            cls.v1 = WriteRequest.FromString(f1.read())
            cls.v2 = Request.FromString(f2.read())
            cls.record_v1 = WriteRequest.FromString(f3.read())
            cls.record_v2 = Request.FromString(f4.read())
        shutil.rmtree(cls.dir)

    def check_value(self, got, expected):
        if expected == "stale":
            self.assertTrue(math.isnan(got))
            self.assertEqual(bits(got), STALE_BITS)
        else:
            self.assertEqual(got, expected)

    def test_v1_series_labels_samples_and_metadata(self):
        self.check_v1(self.v1, EXPECTED)

    def test_v1_request_of_the_sinks_queue_record(self):
        self.check_v1(self.record_v1, RECORD_EXPECTED)

    def test_v2_symbols_refs_samples_start_timestamp_and_metadata(self):
        self.check_v2(self.v2, EXPECTED)

    def test_v2_request_of_the_sinks_queue_record(self):
        self.check_v2(self.record_v2, RECORD_EXPECTED)

    def check_v1(self, request, expected):
        self.assertEqual(len(request.timeseries), len(expected))
        for series, (labels, value, ts, _) in zip(request.timeseries, expected):
            self.assertEqual([(label.name, label.value) for label in series.labels], labels)
            self.assertEqual(len(series.samples), 1)
            self.check_value(series.samples[0].value, value)
            self.assertEqual(series.samples[0].timestamp, ts)
        got = {m.metric_family_name: (m.DESCRIPTOR.fields_by_name["type"].enum_type.values_by_number[m.type].name,
                                      m.help, m.unit) for m in request.metadata}
        self.assertEqual(got, METADATA)

    def check_v2(self, request, expected):
        symbols = list(request.symbols)
        self.assertEqual(symbols[0], "")
        self.assertEqual(len(symbols), len(set(symbols)), "each string once")
        self.assertEqual(len(request.timeseries), len(expected))
        for series, (labels, value, ts, start) in zip(request.timeseries, expected):
            refs = list(series.labels_refs)
            self.assertEqual(len(refs) % 2, 0)
            self.assertEqual([(symbols[refs[i]], symbols[refs[i + 1]]) for i in range(0, len(refs), 2)], labels)
            self.check_value(series.samples[0].value, value)
            self.assertEqual(series.samples[0].timestamp, ts)
            self.assertEqual(series.samples[0].start_timestamp, start)
            if request is self.record_v2 and value == "stale":
                self.assertFalse(series.HasField("metadata"), "the sink's stale markers carry no metadata")
                continue
            family = dict(labels)["__name__"]
            kind, help_text, unit = METADATA[family]
            enum = series.metadata.DESCRIPTOR.fields_by_name["type"].enum_type
            self.assertEqual(enum.values_by_number[series.metadata.type].name, "METRIC_TYPE_" + kind)
            self.assertEqual(symbols[series.metadata.help_ref], help_text)
            self.assertEqual(symbols[series.metadata.unit_ref], unit)


if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1])
