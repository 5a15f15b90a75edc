import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RUN_HEAP_GROWING_PERCENT } from "../../src/cli/heap-growth.js";
import { tempDir, writeJob } from "../helpers/job-files.js";
import { startTestService, type TestService } from "../helpers/service.js";
import { assertBuilt, BIN } from "../helpers/spawn-cli.js";

let service: TestService;
let job: string;
beforeAll(async () => {
	assertBuilt();
	service = await startTestService();
	const dir = tempDir();
	// Counting the rows allocates enough for a few collections once the command has started; with
	// `--gc-global` each is a full one, after which V8 prints the factor it grew the limit by.
	const urls = Array.from({ length: 30_000 }, (_, index) => `${service.site.url}/page/${index + 1}`);
	writeFileSync(join(dir, "urls.txt"), `${urls.join("\n")}\n`);
	job = writeJob(dir, "heap", "name: heap\ndefaults:\n  mode: request\nsources:\n  - file: urls.txt\n");
});
afterAll(async () => service?.close());

/** The factors V8 grew the old space's limit by, as `--trace-gc-verbose` prints them, e.g. ["4.0", "1.5"]. */
async function growingFactors(nodeFlags: string[]): Promise<string[]> {
	const child = spawn(
		process.execPath,
		["--gc-global", "--trace-gc-verbose", ...nodeFlags, BIN, "run", job, "--dry-run"],
		{
			env: { PATH: process.env.PATH, ...service.env },
			stdio: ["ignore", "pipe", "pipe"],
		},
	);
	let stdout = "";
	child.stdout.on("data", (chunk: Buffer) => {
		stdout += chunk.toString();
	});
	const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
	expect(code).toBe(0);
	return [...stdout.matchAll(/\[HeapController\] Limit: .*\((\d+\.\d)\)$/gm)].map((match) => match[1]!);
}

describe("scrapejob run keeps the old space close to its live size", () => {
	it(`grows V8's heap limit by ${RUN_HEAP_GROWING_PERCENT} % past the live heap, not V8's up-to-4× default`, async () => {
		const factors = await growingFactors([]);
		expect(factors).toContain((1 + RUN_HEAP_GROWING_PERCENT / 100).toFixed(1));
	});

	it("leaves a growth the user chose with `node --heap-growing-percent` alone", async () => {
		const factors = await growingFactors(["--heap-growing-percent=80"]);
		expect(factors.length).toBeGreaterThan(0);
		expect(new Set(factors)).toEqual(new Set(["1.8"]));
	});
});
