// libFuzzer's driver, called from a target's own `main` (SwiftPM names an executable's entry
// point itself, so libFuzzer's `main` cannot be used; see docs/fuzzing.md).
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
