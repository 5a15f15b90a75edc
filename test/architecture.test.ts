import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { expect, it } from "vitest";

const src = join(import.meta.dirname, "..", "src");

/**
 * The architecture reads from the tree (docs/architecture.md, "Import rules"): data flows
 * config → job → api → run → output, `cli` on top and `emulator` beside. Each folder may use
 * only the folders listed here, and only through their `index.ts`.
 */
const ALLOWED: Readonly<Record<string, readonly string[]>> = {
	shared: [],
	config: ["shared"],
	extract: ["shared"],
	job: ["shared", "extract"],
	api: ["shared"],
	output: ["shared"],
	report: ["shared", "output"],
	history: ["shared", "output"],
	browser: ["shared"],
	/** Link following: seeds and discovered pages are the job's targets; the frontier is an output file. */
	crawl: ["shared", "extract", "job", "output"],
	/** Many workers on one run, coordinated through PostgreSQL: a second implementation of the run's coordination parts. */
	fleet: ["shared", "job", "output"],
	run: ["shared", "job", "api", "output", "report", "browser", "history", "extract", "crawl", "fleet"],
	emulator: ["shared"],
	/** The one-call library entry (`runJobFile`): what the CLI's `run` assembles, for code. */
	library: ["shared", "config", "job", "api", "output", "run", "emulator", "history", "browser", "fleet"],
	/** The CLI parses flags, prints and maps exit codes; running a job is the library's (one product). */
	cli: ["shared", "config", "job", "api", "output", "run", "report", "browser", "history", "emulator", "library"],
};

async function sourceFiles(dir: string): Promise<string[]> {
	const entries = await readdir(dir, { withFileTypes: true });
	const nested = await Promise.all(
		entries.map((entry) =>
			entry.isDirectory() ? sourceFiles(join(dir, entry.name)) : Promise.resolve([join(dir, entry.name)]),
		),
	);
	return nested.flat().filter((file) => file.endsWith(".ts"));
}

it("imports flow one way, and across folders only through index.ts", async () => {
	const offending: string[] = [];
	for (const file of await sourceFiles(src)) {
		const relative = file.slice(src.length + 1);
		// The package entry point re-exports the public surface of every folder.
		if (relative === "index.ts") continue;
		const folder = relative.split("/")[0]!;
		const text = await readFile(file, "utf8");
		for (const match of text.matchAll(/(?:from|import\()\s*"(\.[^"]+)"/g)) {
			const target = join(file, "..", match[1]!).slice(src.length + 1);
			const targetFolder = target.split("/")[0]!;
			if (targetFolder === folder) continue;
			if (!(ALLOWED[folder] ?? []).includes(targetFolder)) offending.push(`${relative} → ${target} (not allowed)`);
			else if (target !== `${targetFolder}/index.js`) offending.push(`${relative} → ${target} (not via index.ts)`);
		}
	}
	expect(offending).toEqual([]);
});

it("the package entry point loads, and every folder has an index.ts", async () => {
	const entry = await import("../src/index.js");
	expect(typeof entry.startEmulator).toBe("function");
	expect(typeof entry.runJob).toBe("function");
	for (const folder of Object.keys(ALLOWED)) {
		const names = await readdir(join(src, folder));
		expect(names, folder).toContain("index.ts");
	}
});

it("nothing below the CLI prints, exits or hooks the process (the emulator runs beside, as its own server)", async () => {
	const offences: string[] = [];
	for (const file of await sourceFiles(src)) {
		const relative = file.slice(src.length + 1);
		const folder = relative.split("/")[0]!;
		if (folder === "cli" || folder === "emulator") continue;
		const text = await readFile(file, "utf8");
		// Code only: comments may name what they avoid.
		const code = text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
		for (const [pattern, what] of [
			[/\bprocess\.(?:once|on|addListener|prependListener)\(/, "a process hook"],
			[/\bprocess\.exit\(/, "process.exit"],
			[/\bconsole\.(?:log|error|warn|info)\(/, "console output"],
		] as const) {
			if (pattern.test(code)) offences.push(`${relative}: ${what}`);
		}
	}
	expect(offences).toEqual([]);
});

it("the runner assembles named parts: run-job.ts keeps no mutable state of its own (one stop controller)", async () => {
	// Its stop reason, flags and counters live in the stop controller, the budget, the statistics and
	// the other parts it wires together; a `let` here is state that one of them should own.
	const text = await readFile(join(src, "run", "run-job.ts"), "utf8");
	const code = text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
	expect(code.match(/^\s*let\s+\w+.*$/gm) ?? []).toEqual([]);
});

it("the HTTP layer knows nothing of files: src/api/ imports no node:fs (bodies go to the caller's sink)", async () => {
	const offending: string[] = [];
	for (const file of await sourceFiles(join(src, "api"))) {
		const text = await readFile(file, "utf8");
		if (/(?:from|import\()\s*"(?:node:)?fs(?:\/promises)?"/.test(text)) offending.push(file.slice(src.length + 1));
	}
	expect(offending).toEqual([]);
});
