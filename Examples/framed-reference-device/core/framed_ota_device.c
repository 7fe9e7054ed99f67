#include "framed_ota_device.h"
int framed_ota_placeholder(void) { return 0; }
