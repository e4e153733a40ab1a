/* The interface between a fuzz target and its driver.
 *
 * A target is one C file that defines libFuzzer's entry point,
 *   int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
 * which feeds the bytes to one of the project's parsers and returns 0.  The
 * parser must never crash, leak, hang or end the process on bad input; a
 * target that finds a wrong answer (a status outside the documented ones,
 * an accepted value outside its documented range, an empty error message)
 * calls fuzz_fail, which aborts, so that both drivers see a crash.
 *
 * The same file links either with fuzz_driver.c (deterministic seeded
 * mutations, for CTest) or with clang's libFuzzer (-fsanitize=fuzzer, for
 * long runs; see tests/fuzz/README.md). */
#ifndef OMPC_FUZZ_H
#define OMPC_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Optional, called once before the first input. */
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Reports what is wrong with the current input on stderr and aborts. */
_Noreturn __attribute__((format(printf, 1, 2))) void fuzz_fail(const char *fmt, ...);

/* Optional in a target: NULL-terminated strings that fuzz_driver.c also
 * inserts into inputs (tokens of the format, field names). */
extern const char *const fuzz_dict[];

#ifdef __cplusplus
}
#endif

#endif
