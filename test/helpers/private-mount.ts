import { execFileSync, spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";

/**
 * Whether this process may mount a file system of its own (a user and mount namespace, `unshare -rm`):
 * how the tests make a read-only or a full disk without touching the machine's.
 */
export function canMountPrivately(): boolean {
	try {
		execFileSync("unshare", ["-rm", "sh", "-c", 'd=$(mktemp -d) && mount -t tmpfs -o size=16k,ro tmpfs "$d"'], {
			stdio: "ignore",
		});
		return true;
	} catch {
		return false;
	}
}

/**
 * Run the shell `script` in a mount namespace of its own (a `mount` in it is seen by it alone), with
 * `args` as $1, $2, …; resolves with its exit code and what it wrote.
 */
export async function inPrivateMount(
	script: string,
	args: readonly string[],
	env: NodeJS.ProcessEnv,
): Promise<{ code: number; stdout: string; stderr: string }> {
	const child = spawn("unshare", ["-rm", "sh", "-c", script, "sh", ...args], {
		env: { PATH: process.env.PATH, ...env },
		stdio: ["ignore", "pipe", "pipe"],
	});
	let stdout = "";
	let stderr = "";
	child.stdout.on("data", (chunk: Buffer) => {
		stdout += chunk.toString();
	});
	child.stderr.on("data", (chunk: Buffer) => {
		stderr += chunk.toString();
	});
	const code = await new Promise<number>((resolve) => child.on("close", (exit) => resolve(exit ?? -1)));
	return { code, stdout, stderr };
}

/**
 * `scrapejob run JOB` (the built CLI at `bin`) with its `--out` on a tmpfs of `size` of its own, in a
 * private mount: a disk that fills up. What the run left there is copied to `<dir>/kept` before the
 * mount goes; resolves with the run's exit code, its stderr and that folder.
 */
export async function runOnSmallDisk(
	dir: string,
	bin: string,
	job: string,
	env: NodeJS.ProcessEnv,
	size = "512k",
): Promise<{ code: number; stderr: string; kept: string }> {
	const disk = join(dir, "disk");
	const kept = join(dir, "kept");
	mkdirSync(disk);
	const { code, stderr } = await inPrivateMount(
		'mount -t tmpfs -o size="$6" tmpfs "$1" && "$2" "$3" run "$4" --out "$1/out" --quiet; code=$?; cp -r "$1/out" "$5"; exit $code',
		[disk, process.execPath, bin, job, kept, size],
		env,
	);
	return { code, stderr, kept };
}
