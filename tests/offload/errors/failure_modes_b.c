/* Another build of failure_modes.c (one more kernel), for the test of
 * ranks running different builds of a program. */
#define FAILURE_MODES_OTHER_BUILD 1
#include "failure_modes.c"
