/* An LD_PRELOAD shim that tears one write the way a SIGKILL does: for the first pwrite of
 * TORN_BYTES bytes at offset TORN_OFFSET to a file whose path ends with TORN_SUFFIX, write
 * only the first TORN_PAGES pages, then SIGKILL the process (Linux copies a write page by
 * page and stops at a fatal signal, so this is what a kill inside the write leaves).
 * Built by tests/test_catalog_mend.py and benchmarks/torn_metadata.py --real. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

typedef ssize_t (*pwrite_fn)(int, const void *, size_t, off_t);

static int targets(int fd, size_t count, off_t offset) {
    const char *want_offset = getenv("TORN_OFFSET");
    const char *want_bytes = getenv("TORN_BYTES");
    const char *suffix = getenv("TORN_SUFFIX");
    if (!want_offset || !want_bytes || !suffix) return 0;
    if ((off_t)atoll(want_offset) != offset || (size_t)atoll(want_bytes) != count) return 0;
    char link[64], path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0) return 0;
    path[n] = '\0';
    size_t len = strlen(suffix);
    return (size_t)n >= len && strcmp(path + n - len, suffix) == 0;
}

static ssize_t torn(pwrite_fn real, int fd, const void *buf, size_t count, off_t offset) {
    if (targets(fd, count, offset)) {
        size_t pages = (size_t)atoll(getenv("TORN_PAGES") ? getenv("TORN_PAGES") : "1");
        real(fd, buf, pages * 4096, offset);
        kill(getpid(), SIGKILL);
    }
    return real(fd, buf, count, offset);
}

ssize_t pwrite(int fd, const void *buf, size_t count, off_t offset) {
    static pwrite_fn real;
    if (!real) real = (pwrite_fn)dlsym(RTLD_NEXT, "pwrite");
    return torn(real, fd, buf, count, offset);
}

ssize_t pwrite64(int fd, const void *buf, size_t count, off_t offset) {
    static pwrite_fn real;
    if (!real) real = (pwrite_fn)dlsym(RTLD_NEXT, "pwrite64");
    return torn(real, fd, buf, count, offset);
}
