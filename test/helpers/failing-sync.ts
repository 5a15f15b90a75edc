import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * A disk whose flush fails: a shared library preloaded into a child process (LD_PRELOAD) that makes
 * `fsync` and `fdatasync` of files whose path ends in $FAIL_SYNC_SUFFIX fail with EIO, as an NFS or EFS
 * mount reports a write-back it could not complete. Every other call goes to the kernel.
 */
const SOURCE = `#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int failing(int fd) {
	const char *suffix = getenv("FAIL_SYNC_SUFFIX");
	if (suffix == NULL || *suffix == 0) return 0;
	char link[64], path[4096];
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	ssize_t length = readlink(link, path, sizeof path - 1);
	if (length < 0) return 0;
	path[length] = 0;
	size_t wanted = strlen(suffix);
	return (size_t)length >= wanted && strcmp(path + length - wanted, suffix) == 0;
}

int fdatasync(int fd) {
	if (failing(fd)) { errno = EIO; return -1; }
	return (int)syscall(SYS_fdatasync, fd);
}

int fsync(int fd) {
	if (failing(fd)) { errno = EIO; return -1; }
	return (int)syscall(SYS_fsync, fd);
}
`;

/** The preload library's path, compiled once per test run into `dir` (the C compiler is a CI package). */
export function failingSyncLibrary(dir: string): string {
	const library = join(dir, "failing-sync.so");
	if (existsSync(library)) return library;
	mkdirSync(dir, { recursive: true });
	const source = join(dir, "failing-sync.c");
	writeFileSync(source, SOURCE);
	execFileSync("cc", ["-shared", "-fPIC", "-O1", "-o", library, source], { stdio: ["ignore", "ignore", "pipe"] });
	return library;
}

/** The environment that makes a child's flushes of files ending in `suffix` fail with EIO. */
export function failingSyncEnv(dir: string, suffix: string): NodeJS.ProcessEnv {
	return { LD_PRELOAD: failingSyncLibrary(dir), FAIL_SYNC_SUFFIX: suffix };
}
