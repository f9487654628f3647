# The event path end to end (issue 4): the real agent on the simulator tails a job log and the simulator's
# kernel log and pushes to the real gpuscope-push-receiver (Loki protobuf/JSON, OTLP logs) on loopback:
# every class at both sinks, receiver down and back, a kill -9 loop (GPUSCOPE_E2E_CYCLES, default 20), and
# hostile input.
gpuscope_add_python_test(integration_events ${CMAKE_CURRENT_LIST_DIR}/events_test.py
  ARGS $<TARGET_FILE:gpuscope-agent> ${CMAKE_BINARY_DIR}/sim/libnvidia-ml.so.1
       $<TARGET_FILE:gpuscope-push-receiver> ${PROJECT_SOURCE_DIR}
  LABELS integration TIMEOUT 600)
