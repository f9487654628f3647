// DcgmLibrary against tiny stand-in libdcgm builds (fake_dcgm.cc): which candidate loads, what a missing
// symbol or a missing errorString gives, and what a failed Open says.
#include "src/platform/dcgm/dcgm_library.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuscope {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The fakes under DCGM's own names: libdcgm.so.4 (with errorString) and libdcgm.so.3 (without).
const std::string kFakeDir = GPUSCOPE_FAKE_DCGM_DIR;

std::shared_ptr<DcgmLibrary> OpenFake(const std::string& name) {
  std::shared_ptr<DcgmLibrary> dcgm;
  Status status = DcgmLibrary::Open({kFakeDir + "/" + name}, &dcgm);
  EXPECT_TRUE(status.ok()) << status.ToString();
  return dcgm;
}

TEST(DcgmLibraryTest, DefaultCandidatesAreDcgm4ThenDcgm3) {
  EXPECT_THAT(DcgmLibrary::DefaultCandidates(), ElementsAre("libdcgm.so.4", "libdcgm.so.3"));
}

TEST(DcgmLibraryTest, OpenTakesTheFirstCandidateThatLoads) {
  std::vector<std::string> candidates;
  for (const std::string& name : DcgmLibrary::DefaultCandidates())
    candidates.push_back(kFakeDir + "/" + name);
  std::shared_ptr<DcgmLibrary> dcgm;
  ASSERT_TRUE(DcgmLibrary::Open(candidates, &dcgm).ok());
  EXPECT_EQ(dcgm->path(), kFakeDir + "/libdcgm.so.4");
  EXPECT_EQ(dcgm->ErrorString(DCGM_ST_CONNECTION_NOT_VALID), "fake DCGM: the connection is gone");
}

TEST(DcgmLibraryTest, OpenFallsToTheNextCandidateWhenOneDoesNotLoad) {
  std::shared_ptr<DcgmLibrary> dcgm;
  ASSERT_TRUE(DcgmLibrary::Open({"/nonexistent/libdcgm.so.4", kFakeDir + "/libdcgm.so.3"}, &dcgm).ok());
  EXPECT_EQ(dcgm->path(), kFakeDir + "/libdcgm.so.3");
  EXPECT_EQ(dcgm->dcgmInit(), DCGM_ST_OK);
  EXPECT_EQ(dcgm->dcgmShutdown(), DCGM_ST_OK);
}

TEST(DcgmLibraryTest, OpenOfMissingLibrariesIsUnavailableAndNamesEachWithItsError) {
  std::shared_ptr<DcgmLibrary> dcgm;
  Status status = DcgmLibrary::Open({"/nonexistent/libdcgm.so.4", "/nonexistent/libdcgm.so.3"}, &dcgm);
  EXPECT_EQ(status.code(), Status::Code::kUnavailable);
  EXPECT_THAT(status.message(), HasSubstr("cannot load a DCGM library"));
  EXPECT_THAT(status.message(), HasSubstr("/nonexistent/libdcgm.so.4"));
  EXPECT_THAT(status.message(), HasSubstr("/nonexistent/libdcgm.so.3"));
  EXPECT_THAT(status.message(), HasSubstr("No such file"));
  EXPECT_EQ(dcgm, nullptr);
}

TEST(DcgmLibraryTest, OpenOfNoCandidateIsUnavailable) {
  std::shared_ptr<DcgmLibrary> dcgm;
  Status status = DcgmLibrary::Open({}, &dcgm);
  EXPECT_EQ(status.code(), Status::Code::kUnavailable);
  EXPECT_THAT(status.message(), HasSubstr("no library to try"));
  EXPECT_EQ(dcgm, nullptr);
}

TEST(DcgmLibraryTest, CallsThroughToExportedFunctions) {
  auto dcgm = OpenFake("libdcgm.so.4");
  ASSERT_NE(dcgm, nullptr);
  EXPECT_EQ(dcgm->dcgmStartEmbedded(DCGM_OPERATION_MODE_MANUAL, nullptr), DCGM_ST_UNINITIALIZED);
  ASSERT_EQ(dcgm->dcgmInit(), DCGM_ST_OK);
  dcgmHandle_t handle = 0;
  ASSERT_EQ(dcgm->dcgmStartEmbedded(DCGM_OPERATION_MODE_MANUAL, &handle), DCGM_ST_OK);
  unsigned int gpu_ids[DCGM_MAX_NUM_DEVICES] = {};
  int count = 0;
  EXPECT_EQ(dcgm->dcgmGetAllSupportedDevices(handle, gpu_ids, &count), DCGM_ST_OK);
  EXPECT_EQ(count, 2);
  EXPECT_EQ(gpu_ids[1], 1u);
  EXPECT_TRUE(dcgm->Has(DcgmFunction::dcgmGetAllSupportedDevices));
  EXPECT_EQ(dcgm->dcgmShutdown(), DCGM_ST_OK);
}

TEST(DcgmLibraryTest, MissingSymbolReturnsFunctionNotFoundInsteadOfCrashing) {
  auto dcgm = OpenFake("libdcgm.so.4");
  ASSERT_NE(dcgm, nullptr);
  EXPECT_FALSE(dcgm->Has(DcgmFunction::dcgmWatchFields));
  EXPECT_EQ(dcgm->dcgmWatchFields(7, 1, 2, 1000000, 0, 1), DCGM_ST_FUNCTION_NOT_FOUND);
  EXPECT_EQ(dcgm->dcgmWatchFields(7, 1, 2, 1000000, 0, 1), DCGM_ST_FUNCTION_NOT_FOUND);  // cached answer
  EXPECT_EQ(dcgm->dcgmProfPause(7), DCGM_ST_FUNCTION_NOT_FOUND);
  EXPECT_FALSE(dcgm->Has(DcgmFunction::dcgmConnect_v2));
}

TEST(DcgmLibraryTest, ErrorStringComesFromTheLibrary) {
  auto dcgm = OpenFake("libdcgm.so.4");
  ASSERT_NE(dcgm, nullptr);
  EXPECT_EQ(dcgm->ErrorString(DCGM_ST_CONNECTION_NOT_VALID), "fake DCGM: the connection is gone");
}

TEST(DcgmLibraryTest, ErrorStringFallsBackWhenTheLibraryHasNoTextForTheCode) {
  auto dcgm = OpenFake("libdcgm.so.4");
  ASSERT_NE(dcgm, nullptr);
  EXPECT_EQ(dcgm->ErrorString(DCGM_ST_PAUSED), "DCGM error -54");
}

TEST(DcgmLibraryTest, ErrorStringFallsBackWhenTheLibraryLacksErrorString) {
  auto dcgm = OpenFake("libdcgm.so.3");
  ASSERT_NE(dcgm, nullptr);
  EXPECT_EQ(dcgm->ErrorString(DCGM_ST_CONNECTION_NOT_VALID), "DCGM error -21");
}

TEST(DcgmLibraryTest, EveryFunctionAndReturnCodeIsNamedAsDcgmNamesIt) {
#define GPUSCOPE_DCGM_EXPECT_NAME(name, params, args) EXPECT_EQ(DcgmFunctionName(DcgmFunction::name), #name);
  GPUSCOPE_DCGM_FUNCTIONS(GPUSCOPE_DCGM_EXPECT_NAME)
#undef GPUSCOPE_DCGM_EXPECT_NAME
  EXPECT_EQ(DcgmReturnName(DCGM_ST_FUNCTION_NOT_FOUND), "DCGM_ST_FUNCTION_NOT_FOUND");
  EXPECT_EQ(DcgmReturnName(DCGM_ST_NVML_DRIVER_TIMEOUT), "DCGM_ST_NVML_DRIVER_TIMEOUT");
  EXPECT_EQ(DcgmReturnName(static_cast<dcgmReturn_t>(-50)), "DCGM_ST_(unlisted)");  // not in our header
}

}  // namespace
}  // namespace gpuscope
