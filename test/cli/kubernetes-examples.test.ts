import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Command } from "commander";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import type { CliContext } from "../../src/cli/context.js";
import { createProgram } from "../../src/cli/main.js";
import { parseShard } from "../../src/job/index.js";
import { CapturedStream } from "../helpers/run-cli.js";

const dir = join(import.meta.dirname, "..", "..", "examples", "kubernetes");

interface Container {
	command?: string[];
	args?: string[];
	env?: Array<{ name: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }>;
}

/** The argv after `scrapejob` of every scrapejob invocation in a container (shell `a || b` lines included). */
function scrapejobArgv(container: Container): string[][] {
	const words = [...(container.command ?? []), ...(container.args ?? [])];
	if (words[0] === "/bin/sh") {
		return words
			.slice(2)
			.join(" ")
			.split("||")
			.map((part) => part.trim().split(/\s+/))
			.map((tokens) => tokens.slice(tokens.indexOf("scrapejob") + 1));
	}
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
