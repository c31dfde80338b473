/* Wine 8.0 (Debian 12) has no bcryptprimitives.dll, which Rust's standard library on
 * Windows imports for ProcessPrng (its random numbers, e.g. HashMap seeds). This stand-in,
 * built with mingw-w64 and put in the test prefix's system32 by scripts/windows-tests.sh,
 * gives ProcessPrng the system's RtlGenRandom (advapi32's SystemFunction036), which Wine
 * has. Test harness only: never shipped. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length) {
    while (length > 0) {
        ULONG part = length > 0x40000000 ? 0x40000000 : (ULONG)length;
        if (!SystemFunction036(data, part)) {
            return FALSE;
        }
        data += part;
        length -= part;
    }
    return TRUE;
}
