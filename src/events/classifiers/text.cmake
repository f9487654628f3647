# Text helpers shared by both classifier families (find, decimal parsing, field cleaning).
add_library(gpuscope_events_classifier_text ${CMAKE_CURRENT_LIST_DIR}/text.cc)
target_link_libraries(gpuscope_events_classifier_text PUBLIC gpuscope_core)
