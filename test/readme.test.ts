/**
 * README.md and docs/ are the user's manual: every example in them is run here, so they cannot drift
 * from the code.
 *
 * Fenced blocks and what happens to them:
 * - ```yaml — a job file: written to a temporary folder (with placeholder files for its `sources`) and
 *   loaded with the job loader; it must validate. A block whose first line is `# readme-test: scenario`
 *   is an emulator scenario instead and is loaded with the scenario parser. A block whose first line
 *   is `# readme-test: fragment` is a piece of a job file: it must only be valid YAML.
 * - ```cron — each schedule line is run as written (with `cd /srv/scrape` pointing at a temporary
 *   folder and `node dist/cli/bin.js` at the built CLI) with a `KEY=VALUE` env file, against the emulator:
 *   the deploying guide's line (the README's tour prints the same one), and the price-monitoring
 *   recipe's two lines (the incremental-runs guide).
 * - ```ts with first line `// readme-test: library` — compiled with `tsc` against the built package
 *   (imported as "scrapejob", as a user would) and run.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { parseScenarioText } from "../src/emulator/scenario-file.js";
import { JobValidationError, loadJob } from "../src/job/index.js";
import { isRunFolderName, readRecords, tempDir, waitForRecords } from "./helpers/job-files.js";
import { manualFiles, ROOT, readDoc } from "./helpers/manual.js";
import { startTestService, type TestService } from "./helpers/service.js";
import { assertBuilt, BIN } from "./helpers/spawn-cli.js";

const run = promisify(execFile);

interface Block {
	/** The Markdown file it is in, relative to the repository. */
	readonly file: string;
	readonly lang: string;
	readonly text: string;
	/** 1-based line of the opening fence, for messages. */
	readonly line: number;
}

function fencedBlocks(file: string, markdown: string): Block[] {
	const blocks: Block[] = [];
	const fence = /^```(\w*)\n([\s\S]*?)^```$/gm;
	for (const match of markdown.matchAll(fence)) {
		const line = markdown.slice(0, match.index).split("\n").length;
		blocks.push({ file, lang: match[1] ?? "", text: match[2] ?? "", line });
	}
	return blocks;
}

function marker(block: Block): string | null {
	const first = block.text.split("\n")[0] ?? "";
	return /^(?:#|\/\/)\s*readme-test:\s*(\S+)/.exec(first)?.[1] ?? null;
}

const blocks = manualFiles().flatMap((file) => fencedBlocks(file, readDoc(file)));
const yamlBlocks = blocks.filter((block) => block.lang === "yaml");
const jobBlocks = yamlBlocks.filter((block) => marker(block) === null);

/** Placeholder files for a job's `sources`, so the loader can read and count them. */
function writeSources(dir: string, job: unknown): void {
	const sources = (job as { sources?: unknown[] }).sources ?? [];
	// A CSV source also gets the job's `carry` columns and its own `id_column`, with placeholder values.
	const carry = (job as { carry?: string[] }).carry ?? [];
	for (const source of sources) {
		const spec =
			typeof source === "string"
				? { file: source }
				: (source as { file?: string; column?: string; id_column?: string });
		if (!spec.file) continue;
		const path = join(dir, spec.file);
		mkdirSync(dirname(path), { recursive: true });
		const columns = [
			spec.column ?? "url",
			...("id_column" in spec && spec.id_column ? [spec.id_column] : []),
			...carry,
		];
		const values = ["https://shop.example/from-csv", ...columns.slice(1).map((_, index) => `value-${index + 1}`)];
		writeFileSync(
			path,
			/\.[ct]sv$/.test(spec.file)
				? `${columns.join(",")}\n${values.join(",")}\n`
				: "# a comment\nhttps://shop.example/from-text\n",
		);
	}
}

describe("the manual's examples", () => {
	it("has the examples this test knows how to run", () => {
		expect(jobBlocks.length).toBeGreaterThanOrEqual(1);
		expect(yamlBlocks.some((block) => marker(block) === "scenario")).toBe(true);
		expect(blocks.some((block) => block.lang === "cron")).toBe(true);
		expect(blocks.some((block) => block.file === "docs/guides/library.md" && marker(block) === "library")).toBe(true);
		const known = new Set([null, "scenario", "fragment", "library"]);
		expect(blocks.map(marker).filter((kind) => !known.has(kind))).toEqual([]);
	});

	it.each(jobBlocks.map((block) => [`${block.file}:${block.line}`, block] as const))(
		"the yaml job at %s validates with the job loader",
		async (_where, block) => {
			const dir = tempDir("scrapejob-readme-");
			writeSources(dir, parseYaml(block.text));
			const path = join(dir, "job.yaml");
			writeFileSync(path, block.text);
			try {
				// Variables the manual's examples name (a demo site, a webhook secret), set as a user would.
				const env = { SCRAPEJOB_DEMO_SITE: "https://demo.example", HOOK_SECRET: "readme-hook-secret" };
				const { job } = await loadJob(path, { env, cwd: dir });
				expect(job.name).not.toBe("");
			} catch (error) {
				if (error instanceof JobValidationError) {
					throw new Error(`${block.file}:${block.line}: ${error.problems.map((p) => p.message).join("; ")}`);
				}
				throw error;
			}
		},
	);

	it("every yaml scenario block loads with the scenario parser, every fragment is valid YAML", () => {
		for (const block of yamlBlocks) {
			if (marker(block) === "scenario")
				expect(parseScenarioText(block.text, `${block.file}:${block.line}`)).toBeTruthy();
			if (marker(block) === "fragment") expect(() => parseYaml(block.text)).not.toThrow();
		}
	});

	it("the example scenario file in jobs/examples loads", async () => {
		const { loadScenarioFile, startEmulator } = await import("../src/emulator/index.js");
		const scenario = await loadScenarioFile(join(ROOT, "jobs", "examples", "emulator-scenario.yaml"));
		expect(scenario.faults.length).toBeGreaterThan(0);
		const emulator = await startEmulator({ scenario });
		await emulator.close();
	});
});

describe("the manual's commands, run as documented", () => {
	let service: TestService | undefined;
	beforeAll(() => assertBuilt());
	afterEach(async () => {
		await service?.close();
		service = undefined;
	});

	it("the crontab line, run by sh as cron does: a killed night resumed without paying twice, a second run paying only for what is stale, an overlap skipped by flock", async () => {
		const crons = blocks.filter((block) => block.lang === "cron" && block.text.includes("jobs/shop.yaml"));
		const scheduleOf = (block: Block) => block.text.split("\n").find((line) => /^[\d*]/.test(line)) ?? "";
		// The README's tour and the deploying guide print one line: the one run here.
		expect(crons.map((block) => block.file)).toContain("docs/guides/deploying.md");
		expect(new Set(crons.map(scheduleOf)).size).toBe(1);
		const schedule = scheduleOf(crons[0]!);
		const command = schedule.split(/\s+/).slice(5).join(" ");
		expect(command).toContain("cd /srv/scrape");
		expect(command).toContain("flock -n logs/shop.lock");
		expect(command).toContain("node dist/cli/bin.js run jobs/shop.yaml --continue --freshness 20h");

		service = await startTestService({ concurrency: 2 }, 20);
		const dir = tempDir("scrapejob-cron-");
		mkdirSync(join(dir, "jobs"));
		mkdirSync(join(dir, "logs"));
		const total = 20;
		const targets = Array.from({ length: total }, (_, index) => `  - ${service?.site.url}/product/${index + 1}`);
		writeFileSync(
			join(dir, "jobs", "shop.yaml"),
			`name: shop\ndefaults:\n  mode: request\ntargets:\n${targets.join("\n")}\n`,
		);
		// The documented shape: KEY=VALUE lines, no `export`.
		writeFileSync(
			join(dir, "scrapejob.env"),
			`SCRAPEJOB_ACCOUNT_KEY=${service.emulator.accountKey}\nSCRAPEJOB_API_URL=${service.emulator.apiUrl}\n`,
		);
		// Inside the line's single quotes: the paths have no spaces or quotes.
		expect(`${dir}${process.execPath}${BIN}`).not.toMatch(/[\s'"]/);
		const line = command
			.replace("cd /srv/scrape", `cd ${dir}`)
			.replace("node dist/cli/bin.js", `${process.execPath} ${BIN}`);
		// cron runs the line with /bin/sh and an environment without the keys; its own process group.
		const start = () =>
			spawn("/bin/sh", ["-c", line], {
				env: { PATH: process.env.PATH ?? "/usr/bin:/bin", TMPDIR: process.env.TMPDIR },
				detached: true,
				stdio: "ignore",
			});
		const ended = (child: ChildProcess) => new Promise<void>((resolve) => child.once("close", () => resolve()));
		const jobDir = join(dir, "output", "shop");
		const runs = () => (existsSync(jobDir) ? readdirSync(jobDir).filter(isRunFolderName).sort() : []);
		const fetched = () => service!.emulator.ledger.byEndpoint("realtime");

		// The machine goes down mid-run: every process of the line is killed.
		const first = start();
		await waitForRecords(jobDir, 3);
		process.kill(-first.pid!, "SIGKILL");
		await ended(first);
		// The shell that started the line can be gone before the node it started: the next start waits
		// until the last of them has let go of the flock, or `flock -n` would skip it as an overlap.
		const lockFile = join(dir, "logs", "shop.lock");
		for (let tries = 0; tries < 200; tries += 1) {
			if (
				await run("flock", ["-n", lockFile, "true"]).then(
					() => true,
					() => false,
				)
			)
				break;
			await new Promise((resolve) => setTimeout(resolve, 50));
		}
		const killedAt = readRecords(join(jobDir, runs()[0]!)).map((record) => record.url);
		expect(killedAt.length).toBeLessThan(total);
		// The next start (the machine back, or the next night): the same run goes on, nothing recorded is paid again.
		await ended(start());
		expect(runs()).toHaveLength(1);
		const records = readRecords(join(jobDir, runs()[0]!));
		expect(new Set(records.map((record) => record.url)).size).toBe(total);
		for (const url of killedAt) expect(fetched().filter((entry) => entry.url === url)).toHaveLength(1);
		// Only what was in flight at the kill (the key's concurrency, 2) can have been sent twice.
		expect(fetched().length).toBeLessThanOrEqual(total + 2);
		expect(readFileSync(join(dir, "logs", "shop.log"), "utf8")).toContain("done");

		// A second run the same day: a new run, every target fresh, nothing sent.
		const sent = fetched().length;
		await ended(start());
		expect(runs()).toHaveLength(2);
		expect(fetched()).toHaveLength(sent);

		// While the last night still holds the flock, the line does nothing at all.
		const holder = spawn("flock", [join(dir, "logs", "shop.lock"), "-c", "echo held; sleep 30"], {
			stdio: ["ignore", "pipe", "ignore"],
			detached: true,
		});
		await new Promise<void>((resolve) => holder.stdout!.once("data", () => resolve()));
		await ended(start());
		process.kill(-holder.pid!, "SIGKILL");
		await ended(holder);
		expect(runs()).toHaveLength(2);
		expect(fetched()).toHaveLength(sent);
	}, 60_000);

	it("the price-monitoring cron recipe: the night's run (run again: nothing sent, all fresh), the retry run, the export", async () => {
		const recipe = blocks.find((block) => block.lang === "cron" && block.text.includes("jobs/prices.yaml"));
		const lines = (recipe?.text.split("\n") ?? []).filter((line) => /^[\d*]/.test(line));
		expect(lines).toHaveLength(2);
		service = await startTestService();
		const dir = tempDir("scrapejob-prices-");
		mkdirSync(join(dir, "jobs"));
		mkdirSync(join(dir, "logs"));
		const targets = [1, 2, 3].map((id) => `  - ${service?.site.url}/product/${id}`).join("\n");
		writeFileSync(
			join(dir, "jobs", "prices.yaml"),
			`name: prices\nfreshness: 20h\ndefaults:\n  mode: request\nextract:\n  price: {css: .price, type: number}\ntargets:\n${targets}\n`,
		);
		writeFileSync(
			join(dir, "scrapejob.env"),
			`SCRAPEJOB_ACCOUNT_KEY=${service.emulator.accountKey}\nSCRAPEJOB_API_URL=${service.emulator.apiUrl}\n`,
		);
		const shell = (line: string) =>
			run(
				"/bin/sh",
				[
					"-c",
					line
						.split(/\s+/)
						.slice(5)
						.join(" ")
						.replace("cd /srv/scrape", `cd '${dir}'`)
						.replaceAll("node dist/cli/bin.js", `'${process.execPath}' '${BIN}'`),
				],
				{ env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } },
			);
		await shell(lines[0]!);
		const sent = service.emulator.ledger.byEndpoint("realtime").length;
		expect(sent).toBe(3);
		// A second run the same night: every product is fresh, nothing is sent.
		await shell(lines[0]!);
		expect(service.emulator.ledger.byEndpoint("realtime")).toHaveLength(sent);
		await shell(lines[1]!);
		// Nothing failed: the retry run sent nothing; the export has every price.
		expect(service.emulator.ledger.byEndpoint("realtime")).toHaveLength(sent);
		const exported = readFileSync(join(dir, "prices-latest.csv"), "utf8").trim().split(/\r?\n/);
		expect(exported).toHaveLength(4);
		expect(exported[0]).toContain("price");
		const log = readFileSync(join(dir, "logs", "prices.log"), "utf8");
		expect(log).toContain("3 of 3 done: 3 ok");
		expect(log).toContain("0 of 0 done");
		// The next morning the line runs again: yesterday's file is replaced, not kept (an export exits 2 on an
		// existing --out without --force).
		writeFileSync(join(dir, "prices-latest.csv"), "yesterday\n");
		await shell(lines[1]!);
		expect(readFileSync(join(dir, "prices-latest.csv"), "utf8").trim().split(/\r?\n/)).toEqual(exported);
	}, 30_000);

	const libraryBlocks = blocks.filter((block) => block.lang === "ts" && marker(block) === "library");
	it.each(libraryBlocks.map((block) => [`${block.file}:${block.line}`, block] as const))(
		"the library example at %s compiles with tsc against the built package and runs",
		async (_where, example) => {
			const dir = tempDir("scrapejob-library-");
			// A user's project: scrapejob installed (the built package), @types/node, ESM.
			mkdirSync(join(dir, "node_modules", "@types"), { recursive: true });
			symlinkSync(ROOT, join(dir, "node_modules", "scrapejob"), "dir");
			symlinkSync(join(ROOT, "node_modules", "@types", "node"), join(dir, "node_modules", "@types", "node"), "dir");
			mkdirSync(join(dir, "jobs"));
			writeFileSync(join(dir, "jobs", "demo.yaml"), readFileSync(join(ROOT, "jobs", "demo.yaml")));
			writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "module", private: true }));
			writeFileSync(
				join(dir, "tsconfig.json"),
				JSON.stringify({
					compilerOptions: {
						target: "ES2022",
						module: "NodeNext",
						moduleResolution: "NodeNext",
						strict: true,
						outDir: "build",
						types: ["node"],
						skipLibCheck: true,
					},
					include: ["example.ts"],
				}),
			);
			writeFileSync(join(dir, "example.ts"), example.text);
			const tsc = join(ROOT, "node_modules", "typescript", "bin", "tsc");
			await run(process.execPath, [tsc, "-p", dir]).catch((error: { stdout?: string }) => {
				throw new Error(`${example.file}:${example.line} does not compile:\n${error.stdout ?? String(error)}`);
			});
			const result = await run(process.execPath, [join(dir, "build", "example.js")], {
				cwd: dir,
				env: { PATH: process.env.PATH ?? "" },
			});
			if (example.file === "docs/guides/library.md" && example.text.includes("maxCredits: 10")) {
				// The typed example: the demo's budget of 10 credits stops it, as `run --max-credits 10` exits 1.
				expect(result.stdout).toBe("budget_exhausted: exit 1\n");
			} else if (example.file === "docs/guides/library.md") {
				expect(result.stdout).toMatch(/^\d+ ok, \d+ credits, results in .*output\/demo\/\S+\n$/);
				expect(result.stderr).toMatch(/\d+ targets done/);
			} else {
				expect(result.stdout).not.toBe("");
			}
		},
		60_000,
	);
});
