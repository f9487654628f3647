# Classifiers for training jobs' output: NCCL, PyTorch watchdog and OOM, CUDA errors.
add_library(gpuscope_events_jobs
  ${CMAKE_CURRENT_LIST_DIR}/cuda.cc
  ${CMAKE_CURRENT_LIST_DIR}/job_classifier.cc
  ${CMAKE_CURRENT_LIST_DIR}/jobs_text.cc
  ${CMAKE_CURRENT_LIST_DIR}/nccl.cc
  ${CMAKE_CURRENT_LIST_DIR}/torch.cc)
target_link_libraries(gpuscope_events_jobs PUBLIC gpuscope_events_core PRIVATE gpuscope_events_classifier_text)
