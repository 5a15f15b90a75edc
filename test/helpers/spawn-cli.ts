import { type ChildProcess, spawn } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { staleSource } from "./build-dist.js";

/** The built CLI; the test run's global set-up (test/helpers/build-dist.ts) rebuilds it when src/ is newer. */
export const BIN = join(import.meta.dirname, "..", "..", "dist", "cli", "bin.js");

/** Fails rather than test an old build (a run without the global set-up, or src/ edited since it ran). */
export function assertBuilt(): void {
	if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run \`npm run build\` first (npm test does)`);
	const stale = staleSource();
	if (stale !== undefined) throw new Error(`dist/ is older than src/: run npm run build (${stale} is newer)`);
}

export interface SpawnedCli {
	child: ChildProcess;
	/** Resolves with the exit code (or 128 + signal number when killed) and the output. */
	done: Promise<{ code: number; signal: NodeJS.Signals | null; stdout: string; stderr: string }>;
}

/** Start the built CLI as a real process, as cron would. */
export function spawnCli(args: string[], env: NodeJS.ProcessEnv, cwd?: string): SpawnedCli {
	return spawnNode([BIN, ...args], env, cwd);
}

/** Start this Node with `args` (a script of the library's, say) as a process of its own. */
export function spawnNode(args: string[], env: NodeJS.ProcessEnv, cwd?: string): SpawnedCli {
	const child = spawn(process.execPath, args, {
		// TMPDIR: the test run's own temporary folder (test/helpers/temp-root.ts).
		env: { PATH: process.env.PATH, TMPDIR: process.env.TMPDIR, ...env },
		cwd,
		stdio: ["ignore", "pipe", "pipe"],
	});
	return { child, done: outcomeOf(child) };
}

/** The exit code (or 128 + signal number when killed) and what a child printed, once it has closed. */
function outcomeOf(child: ChildProcess): SpawnedCli["done"] {
	let stdout = "";
	let stderr = "";
	child.stdout?.on("data", (chunk: Buffer) => {
		stdout += chunk.toString();
	});
	child.stderr?.on("data", (chunk: Buffer) => {
		stderr += chunk.toString();
	});
	return new Promise((resolve) => {
		child.on("close", (code, signal) => resolve({ code: code ?? -1, signal, stdout, stderr }));
	});
}

/**
 * Run a hint the CLI printed exactly as a user pastes it: through `sh -c`, where `npx scrapejob`
 * (the README's form) is this checkout's built CLI. Quoting, flags and paths are the hint's own.
 */
export function runPrintedCommand(command: string, env: NodeJS.ProcessEnv, cwd: string): SpawnedCli {
	const shims = mkdtempSync(join(tmpdir(), "npx-shim-"));
	// `npx scrapejob …` → `node dist/cli/bin.js …`; any other npx use is a test error.
	writeFileSync(
		join(shims, "npx"),
		`#!/bin/sh\n[ "$1" = scrapejob ] || { echo "npx shim: only scrapejob, got $1" >&2; exit 127; }\nshift\nexec "${process.execPath}" "${BIN}" "$@"\n`,
	);
	chmodSync(join(shims, "npx"), 0o755);
	const child = spawn("/bin/sh", ["-c", command], {
		env: { TMPDIR: process.env.TMPDIR, ...env, PATH: `${shims}:${process.env.PATH ?? ""}` },
		cwd,
		stdio: ["ignore", "pipe", "pipe"],
	});
	return { child, done: outcomeOf(child) };
}

/** The child's outcome, or null (it is then killed) when it has not ended within `ms`. */
export async function endedWithin(child: SpawnedCli, ms: number): Promise<Awaited<SpawnedCli["done"]> | null> {
	let timer: NodeJS.Timeout | undefined;
	const ended = await Promise.race([
		child.done,
		new Promise<null>((resolve) => {
			timer = setTimeout(() => resolve(null), ms);
		}),
	]);
	clearTimeout(timer);
	if (ended === null) child.child.kill("SIGKILL");
	return ended;
}
