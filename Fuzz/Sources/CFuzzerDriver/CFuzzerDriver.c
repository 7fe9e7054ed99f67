// Declarations only: LLVMFuzzerRunDriver comes with -sanitize=fuzzer.
#include "CFuzzerDriver.h"
