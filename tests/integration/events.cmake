# The event path end to end (issue 4): the real agent on the simulator tails a job log and the simulator's
# kernel log and pushes to the real gpuscope-push-receiver (Loki protobuf/JSON, OTLP logs) on loopback:
# every class at both sinks, receiver down and back, a kill -9 loop (GPUSCOPE_E2E_CYCLES, default 20), and
# hostile input.
add_test(NAME integration_events
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/events_test.py
                 $<TARGET_FILE:gpuscope-agent> ${CMAKE_BINARY_DIR}/sim/libnvidia-ml.so.1
                 $<TARGET_FILE:gpuscope-push-receiver> ${PROJECT_SOURCE_DIR})
set_tests_properties(integration_events PROPERTIES LABELS integration TIMEOUT 600)
