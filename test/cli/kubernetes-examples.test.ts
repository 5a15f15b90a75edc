import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync } from "node:fs";
import { join } from "node:path";
import type { Command } from "commander";
import { afterEach, describe, expect, it } from "vitest";
import { parse } from "yaml";
import type { CliContext } from "../../src/cli/context.js";
import { createProgram } from "../../src/cli/main.js";
import { parseShard } from "../../src/job/index.js";
import { readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { CapturedStream } from "../helpers/run-cli.js";
import { startTestService, type TestService } from "../helpers/service.js";
import { runPrintedCommand } from "../helpers/spawn-cli.js";

const dir = join(import.meta.dirname, "..", "..", "examples", "kubernetes");

interface Container {
	command?: string[];
	args?: string[];
	env?: Array<{ name: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }>;
}

/** A container's shell script as the shell gets it: Kubernetes turns `$$` into `$` (its own escape). */
function podScript(container: Container): string | null {
	const words = [...(container.command ?? []), ...(container.args ?? [])];
	return words[0] === "/bin/sh" ? words.slice(2).join("\n").replaceAll("$$", "$") : null;
}

/** The argv after `scrapejob` of every scrapejob invocation in a container (each line of a shell script). */
function scrapejobArgv(container: Container): string[][] {
	const script = podScript(container);
	if (script !== null) {
		return script
			.split("\n")
			.filter((line) => line.includes("npx scrapejob"))
			.map((line) => line.trim().split(/\s+/))
			.map((tokens) => tokens.slice(tokens.indexOf("scrapejob") + 1));
	}
	const words = [...(container.command ?? []), ...(container.args ?? [])];
	return [words.slice(words.indexOf("scrapejob") + 1)];
}

/** Parse argv with the CLI's own commander program, the command's action replaced: options are checked, nothing runs. */
async function parsedOptions(argv: string[]): Promise<Record<string, unknown>> {
	const ctx: CliContext = {
		stdout: new CapturedStream(),
		stderr: new CapturedStream(),
		env: {},
		cwd: process.cwd(),
		exitCode: 0,
		signal: new AbortController().signal,
	};
	const program = createProgram(ctx);
	let options: Record<string, unknown> = {};
	const command = program.commands.find((candidate: Command) => candidate.name() === argv[0]);
	expect(command, argv[0]).toBeDefined();
	command!.action((_jobs: string[], flags: Record<string, unknown>) => {
		options = flags;
	});
	await program.parseAsync(argv, { from: "user" });
	return options;
}

interface PodTemplate {
	spec: { containers: Container[] };
}

function containersOf(manifest: {
	kind: string;
	spec: { template?: PodTemplate; jobTemplate?: { spec: { template: PodTemplate } } };
}): Container[] {
	const template = manifest.kind === "CronJob" ? manifest.spec.jobTemplate?.spec.template : manifest.spec.template;
	return template?.spec.containers ?? [];
}

let service: TestService | undefined;
afterEach(async () => {
	await service?.close();
	service = undefined;
});

describe("examples/kubernetes", () => {
	it("the Indexed Job runs every shard with --shard auto/N, N its completions, resuming on restart", async () => {
		const manifest = parse(readFileSync(join(dir, "indexed-job.yaml"), "utf8"));
		expect(manifest).toMatchObject({ kind: "Job", spec: { completionMode: "Indexed" } });
		const completions = manifest.spec.completions as number;
		// Every shard at once (crawl links and the key's share go between running shards); retries per index.
		expect(manifest.spec.parallelism).toBe(completions);
		expect(manifest.spec.backoffLimitPerIndex).toBeGreaterThan(0);
		const [container] = containersOf(manifest);
		const invocations = scrapejobArgv(container!);
		expect(invocations).toHaveLength(2);
		for (const argv of invocations) {
			const options = await parsedOptions(argv);
			expect(options.shard).toBe(`auto/${completions}`);
			// Each pod's index (0-based in JOB_COMPLETION_INDEX) is a shard of the job.
			for (let index = 0; index < completions; index += 1) {
				expect(parseShard(String(options.shard), { JOB_COMPLETION_INDEX: String(index) })).toEqual({
					index: index + 1,
					count: completions,
				});
			}
		}
		expect((await parsedOptions(invocations[0]!)).resume).toBe(true);
		expect(container!.env).toContainEqual(
			expect.objectContaining({ name: "SCRAPEJOB_ACCOUNT_KEY", valueFrom: { secretKeyRef: expect.any(Object) } }),
		);
	});

	it("the Indexed Job's pod script, run: a new run on first start, its resume on a restart, never a second run that pays again", async () => {
		const manifest = parse(readFileSync(join(dir, "indexed-job.yaml"), "utf8"));
		const script = podScript(containersOf(manifest)[0]!);
		expect(script).not.toBeNull();
		service = await startTestService();
		const work = tempDir();
		const out = join(work, "volume", "output");
		const targets = Array.from({ length: 40 }, (_, index) => `  - ${service!.site.url}/product/${index + 1}`);
		// A budget the shard reaches: its run stops early and exits with an error, as a pod that is restarted.
		writeJob(
			work,
			"shop",
			`name: shop\nshard_by: url\nmax_credits: 2\ndefaults:\n  mode: request\ntargets:\n${targets.join("\n")}\n`,
		);
		mkdirSync(join(work, "jobs"));
		renameSync(join(work, "shop.yaml"), join(work, "jobs", "shop.yaml"));
		const pod = () =>
			runPrintedCommand(script!.replaceAll("/data/output", out), { ...service!.env, JOB_COMPLETION_INDEX: "0" }, work)
				.done;
		const shardFolders = () =>
			existsSync(join(out, "shop"))
				? readdirSync(join(out, "shop")).filter((name) => name.endsWith("-shard-1-of-4"))
				: [];
		const paid = () => service!.emulator.ledger.byEndpoint("realtime").length;

		const first = await pod();
		expect(first.code, first.stderr).not.toBe(0);
		expect(shardFolders()).toHaveLength(1);
		const summary = readSummary(join(out, "shop", shardFolders()[0]!));
		expect(summary.stopped_reason).toBe("budget_exhausted");
		expect(summary.targets.total).toBeGreaterThan(2);
		const paidFirst = paid();
		expect(paidFirst).toBeGreaterThan(0);
		expect(summary.credits.used).toBeLessThanOrEqual(2);

		// The pod restarted: it resumes that run (its budget kept), which ends again at once; no new run.
		const restart = await pod();
		expect(restart.code, restart.stderr).toBe(first.code);
		expect(shardFolders()).toHaveLength(1);
		expect(paid()).toBe(paidFirst);
	});

	it("the CronJob's container runs a nightly job with a budget and health pings, the key and ping URL from a Secret", async () => {
		const manifest = parse(readFileSync(join(dir, "cronjob.yaml"), "utf8"));
		expect(manifest).toMatchObject({ kind: "CronJob", spec: { concurrencyPolicy: "Forbid" } });
		const [container] = containersOf(manifest);
		const [argv] = scrapejobArgv(container!);
		// Kubernetes expands $(NAME) in args from the container's env: a Secret's value here.
		const pingUrl = "https://hc-ping.com/0f7c1d2e-secret";
		const expanded = argv!.map((word) => (word === "$(HEALTHCHECK_URL)" ? pingUrl : word));
		expect(expanded).not.toEqual(argv);
		const options = await parsedOptions(expanded);
		expect(options).toMatchObject({ out: "/data/output", quiet: true, maxCredits: 50_000, healthcheck: pingUrl });
		expect(container!.env).toContainEqual(expect.objectContaining({ name: "SCRAPEJOB_ACCOUNT_KEY" }));
		expect(container!.env).toContainEqual({
			name: "HEALTHCHECK_URL",
			valueFrom: { secretKeyRef: { name: "scrapejob", key: "healthcheck-url" } },
		});
		expect(container!.env).toContainEqual(expect.objectContaining({ name: "OTEL_EXPORTER_OTLP_ENDPOINT" }));
	});
});
