import { spawn } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { constants } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import type { ResultRecord } from "../../src/output/index.js";
import { isRunFolderName, readRecords, readSummary, tempDir } from "../helpers/job-files.js";
import {
	type Container,
	expandKubernetesVariables,
	jobSpecOf,
	type Manifest,
	podFailureAction,
	schemaProblems,
	serverRuleProblems,
} from "../helpers/kubernetes.js";
import { useCluster } from "../helpers/postgres.js";
import { queryDatabase } from "../helpers/postgres-cluster.js";
import { type TestService, useTestService } from "../helpers/service.js";
import { assertBuilt, BIN } from "../helpers/spawn-cli.js";
import { startTargetSite } from "../helpers/target-site.js";

const dir = join(import.meta.dirname, "..", "..", "examples", "kubernetes");
const cluster = useCluster();

/** The URLs of the fleet's records of the job `shop`, read from PostgreSQL. */
async function fleetRecords(url: string): Promise<string[]> {
	const rows = await queryDatabase<{ url: string }>(url, "SELECT record->>'url' AS url FROM scrapejob.records");
	return rows.map((row) => row.url);
}
const files = readdirSync(dir).filter((name) => name.endsWith(".yaml"));
const manifests = files.map((file) => ({ file, manifest: parse(readFileSync(join(dir, file), "utf8")) as Manifest }));
const manifestOf = (file: string) => manifests.find((entry) => entry.file === file)!.manifest;

describe("examples/kubernetes: what the API server accepts", () => {
	it("holds the CronJob, the Indexed Job and the fleet's Job", () => {
		expect(files).toEqual(expect.arrayContaining(["cronjob.yaml", "indexed-job.yaml", "fleet-job.yaml"]));
	});

	it("every manifest matches the Kubernetes OpenAPI schema, with no field the API does not have", () => {
		expect(schemaProblems(manifests)).toEqual([]);
	}, 60_000);

	it("every manifest keeps the rules the API server enforces across fields (restart policy, Indexed, podFailurePolicy)", () => {
		expect(manifests.flatMap(({ file, manifest }) => serverRuleProblems(file, manifest))).toEqual([]);
	});

	it("the checks refuse what the API server refuses", () => {
		const indexed = structuredClone(manifestOf("indexed-job.yaml"));
		indexed.spec.template.spec.restartPolicy = "OnFailure";
		expect(serverRuleProblems("x", indexed).join("\n")).toContain("backoffLimitPerIndex needs restartPolicy Never");
		expect(serverRuleProblems("x", indexed).join("\n")).toContain("podFailurePolicy needs restartPolicy Never");
		const notIndexed = structuredClone(manifestOf("indexed-job.yaml"));
		delete notIndexed.spec.completionMode;
		expect(serverRuleProblems("x", notIndexed).join("\n")).toContain(
			"backoffLimitPerIndex needs completionMode Indexed",
		);
		const replacing = structuredClone(manifestOf("cronjob.yaml"));
		replacing.spec.jobTemplate!.spec.podReplacementPolicy = "TerminatingOrFailed";
		expect(serverRuleProblems("x", replacing).join("\n")).toContain("podReplacementPolicy must be Failed");
		const stray = structuredClone(manifestOf("cronjob.yaml"));
		(stray.spec.jobTemplate!.spec as unknown as Record<string, unknown>).backofLimit = 3;
		expect(schemaProblems([{ file: "stray.yaml", manifest: stray }]).join("\n")).toContain("backofLimit");
	}, 60_000);

	it("retries only what a retry can fix: an outage, a lock, a signal; never a finished run, an invalid job, a full disk or an open breaker", () => {
		for (const { file, manifest } of manifests) {
			const spec = jobSpecOf(manifest);
			const container = spec.template.spec.containers[0]!.name;
			const action = (code: number) => podFailureAction(spec, container, code);
			for (const code of [3, 4, 130, 137, 143]) expect(action(code), `${file}: exit ${code}`).toBe("Count");
			for (const code of [2, 5, 6]) expect(action(code), `${file}: exit ${code}`).toBe("FailJob");
			// A shard that finished with failed targets fails its index alone; the others go on.
			expect(action(1), `${file}: exit 1`).toBe(spec.completionMode === "Indexed" ? "FailIndex" : "FailJob");
			expect(spec.podReplacementPolicy).toBe("Failed");
			expect(spec.podFailurePolicy?.rules).toContainEqual({
				action: "Ignore",
				onPodConditions: [{ type: "DisruptionTarget" }],
			});
		}
		const cron = manifestOf("cronjob.yaml");
		expect(cron.spec).toMatchObject({ concurrencyPolicy: "Forbid", startingDeadlineSeconds: expect.any(Number) });
		const indexed = manifestOf("indexed-job.yaml");
		expect(indexed.spec).toMatchObject({ completionMode: "Indexed", template: { spec: { restartPolicy: "Never" } } });
		expect(indexed.spec.parallelism).toBe(indexed.spec.completions);
		// The fleet's: Kubernetes' work-queue pattern (parallelism, no completions), the Job's name as the run's.
		const fleet = manifestOf("fleet-job.yaml");
		expect(fleet.spec.parallelism).toBeGreaterThan(1);
		expect(fleet.spec.completions).toBeUndefined();
		const args = fleet.spec.template.spec.containers[0]!.args!;
		expect(args[args.indexOf("--fleet-run") + 1]).toBe("$(JOB_NAME)");
		expect(fleet.spec.template.spec.containers[0]!.env).toContainEqual({
			name: "JOB_NAME",
			valueFrom: { fieldRef: { fieldPath: "metadata.labels['batch.kubernetes.io/job-name']" } },
		});
	});

	it("a stopped pod is given longer than scrapejob's grace period: the fetches in flight end in records, not a SIGKILL", () => {
		for (const { file, manifest } of manifests) {
			const pod = jobSpecOf(manifest).template.spec;
			for (const container of pod.containers) {
				const flag = container.args?.indexOf("--grace-period") ?? -1;
				const graceMs = flag >= 0 ? Number(container.args?.[flag + 1]) : 30_000;
				// The kubelet's default is 30 s, the CLI's grace period: its SIGKILL would land as the run closes.
				expect(pod.terminationGracePeriodSeconds ?? 30, file).toBeGreaterThanOrEqual(graceMs / 1000 + 15);
			}
		}
	});

	it("pods start the image's scrapejob (never npx) and take the key from a Secret", () => {
		for (const { file, manifest } of manifests) {
			for (const container of jobSpecOf(manifest).template.spec.containers) {
				expect(container.command, file).toEqual(["scrapejob"]);
				expect(JSON.stringify(container), file).not.toContain("npx");
				expect(container.args?.slice(0, 1), file).toEqual(["run"]);
				expect(container.args, file).toEqual(expect.arrayContaining(["--continue", "--freshness"]));
				expect(container.env, file).toContainEqual({
					name: "SCRAPEJOB_ACCOUNT_KEY",
					valueFrom: { secretKeyRef: { name: "scrapejob", key: "account-key" } },
				});
			}
		}
	});
});

/** A pod as the kubelet starts it: its command line, env (Secrets filled in) and volume, on this machine. */
interface Pod {
	/** Exit code, or 128 + the signal's number when killed. */
	run(options?: { index?: number; killAfterRecords?: number }): Promise<number>;
}

/** The fetches the emulator charged, per target URL. */
function chargesByUrl(service: TestService): Map<string, number> {
	const charges = new Map<string, number>();
	for (const entry of service.emulator.ledger.byEndpoint("realtime"))
		if (entry.creditsCharged > 0 && entry.url) charges.set(entry.url, (charges.get(entry.url) ?? 0) + 1);
	return charges;
}

/**
 * The manifest's container run as written: `scrapejob` is this checkout's built CLI (the image's
 * entry point), the volume's mount path a temporary folder, the Secret's keys the emulator's, any
 * other service URL a loopback sink; `$(NAME)` expanded from the env as Kubernetes does.
 */
async function podOf(
	manifest: Manifest,
	service: TestService,
	workDir: string,
	volume: string,
	sink: string,
	events: string[],
	fleetUrl?: string,
): Promise<Pod> {
	const spec = jobSpecOf(manifest);
	const container: Container = spec.template.spec.containers[0]!;
	const secrets: Record<string, string> = {
		"account-key": service.emulator.accountKey!,
		"healthcheck-url": sink,
		...(fleetUrl !== undefined ? { "fleet-url": fleetUrl } : {}),
	};
	const env: Record<string, string> = {};
	for (const variable of container.env ?? []) {
		const key = variable.valueFrom?.secretKeyRef?.key;
		const field = variable.valueFrom?.fieldRef?.fieldPath;
		// The Job controller labels its pods with the Job's name; the downward API hands it over.
		if (field !== undefined) {
			expect(field).toBe("metadata.labels['batch.kubernetes.io/job-name']");
			env[variable.name] = manifest.metadata.name;
		} else if (key !== undefined) {
			expect(secrets[key], `a Secret key the test knows: ${key}`).toBeDefined();
			env[variable.name] = secrets[key]!;
		} else env[variable.name] = /^https?:\/\//.test(variable.value ?? "") ? sink : (variable.value ?? "");
	}
	const mounts = container.volumeMounts ?? [];
	const onVolume = (word: string) =>
		mounts.reduce((text, mount) => text.replaceAll(`${mount.mountPath}/`, `${volume}/`), word);
	const words = [...(container.command ?? []), ...(container.args ?? [])].map((word) =>
		onVolume(expandKubernetesVariables(word, env)),
	);
	// The image puts scrapejob on PATH; here it is the built CLI (`npx scrapejob` too, as older recipes had it).
	const bin = tempDir("k8s-bin-");
	writeFileSync(join(bin, "scrapejob"), `#!/bin/sh\nexec "${process.execPath}" "${BIN}" "$@"\n`);
	writeFileSync(
		join(bin, "npx"),
		`#!/bin/sh\n[ "$1" = scrapejob ] || exit 127\nshift\nexec "${process.execPath}" "${BIN}" "$@"\n`,
	);
	chmodSync(join(bin, "scrapejob"), 0o755);
	chmodSync(join(bin, "npx"), 0o755);
	return {
		run: ({ index, killAfterRecords } = {}) =>
			new Promise((resolve, reject) => {
				const child = spawn(words[0]!, words.slice(1), {
					cwd: workDir,
					env: {
						...env,
						// Where the emulator listens: the service's address, not a secret of the manifest.
						SCRAPEJOB_API_URL: service.emulator.apiUrl,
						// A killed pod's claims (a fleet's) or lock (a shard's) lapse 2 s after its last beat, not 30: its
						// replacement starts within the test. The manifests' command lines are unchanged.
						SCRAPEJOB_LOCK_LEASE_MS: "2000",
						PATH: `${bin}:${process.env.PATH ?? ""}`,
						TMPDIR: process.env.TMPDIR,
						...(index !== undefined ? { JOB_COMPLETION_INDEX: String(index) } : {}),
					},
					stdio: ["ignore", "ignore", "pipe"],
				});
				let stderr = "";
				child.stderr.on("data", (chunk: Buffer) => {
					stderr += chunk.toString();
				});
				let timer: NodeJS.Timeout | undefined;
				if (killAfterRecords !== undefined) {
					timer = setInterval(() => {
						if (recordsOnVolume(volume).length >= killAfterRecords) child.kill("SIGKILL");
					}, 5);
				}
				child.on("error", reject);
				child.on("close", (code, signal) => {
					clearInterval(timer);
					const exit = signal ? 128 + constants.signals[signal] : (code ?? -1);
					events.push(`pod${index === undefined ? "" : `-${index}`} exit ${exit}`);
					if (stderr.trim() !== "") events.push(stderr.trim());
					resolve(exit);
				});
			}),
	};
}

/** Every record of every run folder of the job `shop` on the volume (fleet workers' folders included). */
function recordsOnVolume(volume: string): ResultRecord[] {
	const jobDir = join(volume, "output", "shop");
	if (!existsSync(jobDir)) return [];
	const fleetDir = join(jobDir, "fleet");
	const folders = [
		...readdirSync(jobDir)
			.filter(isRunFolderName)
			.map((name) => join(jobDir, name)),
		...(existsSync(fleetDir) ? readdirSync(fleetDir).map((name) => join(fleetDir, name)) : []),
	];
	return folders.flatMap((folder) => (existsSync(join(folder, "results.jsonl")) ? readRecords(folder) : []));
}

function runFolders(volume: string): string[] {
	const jobDir = join(volume, "output", "shop");
	return existsSync(jobDir)
		? readdirSync(jobDir)
				.filter((name) => isRunFolderName(name) && name !== "fleet")
				.sort()
		: [];
}

/**
 * The Job controller's loop for one index (or a non-indexed Job): start the pod, and on a failure do
 * what the manifest's podFailurePolicy says — retry (Count, Ignore) while the backoff limit allows.
 */
async function runLikeTheJobController(
	manifest: Manifest,
	pod: Pod,
	options: { index?: number; killFirstAfterRecords?: number } = {},
): Promise<{ outcome: string; pods: number }> {
	const spec = jobSpecOf(manifest);
	const limit = spec.backoffLimitPerIndex ?? spec.backoffLimit ?? 6;
	const container = spec.template.spec.containers[0]!.name;
	let failures = 0;
	for (let pods = 1; ; pods += 1) {
		const exit = await pod.run({
			...(options.index !== undefined ? { index: options.index } : {}),
			...(pods === 1 && options.killFirstAfterRecords !== undefined
				? { killAfterRecords: options.killFirstAfterRecords }
				: {}),
		});
		const action = podFailureAction(spec, container, exit);
		if (action === "Succeeded" || action === "FailJob" || action === "FailIndex") return { outcome: action, pods };
		if (action === "Count") failures += 1;
		if (failures > limit) return { outcome: "BackoffLimitExceeded", pods };
	}
}

interface Setup {
	service: TestService;
	volume: string;
	workDir: string;
	sink: string;
	events: string[];
}

async function setUp(): Promise<Setup> {
	const service = await useTestService({ concurrency: 2 }, 5);
	const sinkSite = await startTargetSite((_req, res) => res.writeHead(200).end());
	const root = tempDir("k8s-pod-");
	const workDir = join(root, "app");
	const volume = join(root, "volume");
	mkdirSync(join(workDir, "jobs"), { recursive: true });
	mkdirSync(volume);
	return { service, volume, workDir, sink: sinkSite.origin, events: [] };
}

/** The job file the image would hold, jobs/shop.yaml: these targets, fetched with mode request. */
function writeShopJob(setup: Setup, targets: string[], keys = ""): void {
	writeFileSync(
		join(setup.workDir, "jobs", "shop.yaml"),
		`name: shop\n${keys}defaults:\n  mode: request\ntargets:\n${targets.map((url) => `  - ${url}`).join("\n")}\n`,
	);
}

function products(service: TestService, count: number): string[] {
	return Array.from({ length: count }, (_, index) => `${service.site.url}/product/${index + 1}`);
}

describe("examples/kubernetes: each pod's command line, run as written against the emulator", () => {
	beforeAll(() => assertBuilt());

	it("cronjob.yaml: a pod killed mid-run and replaced pays nothing twice; applied again after completion it pays nothing for fresh targets", async () => {
		const manifest = manifestOf("cronjob.yaml");
		const setup = await setUp();
		const targets = products(setup.service, 40);
		writeShopJob(setup, targets);
		const pod = await podOf(manifest, setup.service, setup.workDir, setup.volume, setup.sink, setup.events);

		// First start, SIGKILLed after 8 records (the node died); the controller starts a replacement.
		const night = await runLikeTheJobController(manifest, pod, { killFirstAfterRecords: 8 });
		expect(night, setup.events.join("\n")).toEqual({ outcome: "Succeeded", pods: 2 });
		expect(runFolders(setup.volume)).toHaveLength(1);
		const [run] = runFolders(setup.volume);
		expect(readSummary(join(setup.volume, "output", "shop", run!))).toMatchObject({ complete: true });
		const records = recordsOnVolume(setup.volume);
		expect(new Set(records.map((record) => record.url))).toEqual(new Set(targets));
		expect(records).toHaveLength(40);
		// Each target paid once; only fetches in flight at the kill (at most the key's concurrency, 2) twice.
		const charges = chargesByUrl(setup.service);
		const twice = [...charges.values()].filter((count) => count > 1).length;
		expect([...charges.values()].every((count) => count <= 2)).toBe(true);
		expect(twice).toBeLessThanOrEqual(2);
		const paidAfterNight = setup.service.emulator.ledger.totalCharged();

		// `kubectl apply` again (or the next schedule within the freshness window): a new run, nothing paid.
		const again = await runLikeTheJobController(manifest, pod);
		expect(again).toEqual({ outcome: "Succeeded", pods: 1 });
		expect(runFolders(setup.volume)).toHaveLength(2);
		expect(setup.service.emulator.ledger.totalCharged()).toBe(paidAfterNight);
	}, 60_000);

	it("cronjob.yaml: a failed target ends the night (exit 1, no retry that pays the job again); the next night fetches only it", async () => {
		const manifest = manifestOf("cronjob.yaml");
		const setup = await setUp();
		const failing = `${setup.service.site.url}/no-such-page`;
		writeShopJob(setup, [...products(setup.service, 6), failing], "retry:\n  attempts: 1\n");
		const pod = await podOf(manifest, setup.service, setup.workDir, setup.volume, setup.sink, setup.events);
		const night = await runLikeTheJobController(manifest, pod);
		expect(night, setup.events.join("\n")).toEqual({ outcome: "FailJob", pods: 1 });
		expect(recordsOnVolume(setup.volume).find((record) => record.url === failing)?.status).toBe("failed");
		const fetched = setup.service.emulator.ledger.byEndpoint("realtime").length;
		expect(fetched).toBe(7);

		// The next night: the six ok targets are fresh, the failed one is not.
		const next = await runLikeTheJobController(manifest, pod);
		expect(next.outcome).toBe("FailJob");
		const sent = setup.service.emulator.ledger.byEndpoint("realtime").slice(fetched);
		expect(sent.map((entry) => entry.url)).toEqual([failing]);
	}, 60_000);

	it("indexed-job.yaml: every index runs its shard; a killed index is replaced and pays nothing twice; applied again, nothing is paid", async () => {
		const manifest = manifestOf("indexed-job.yaml");
		const setup = await setUp();
		const targets = products(setup.service, 48);
		writeShopJob(setup, targets, "shard_by: url\n");
		const pod = await podOf(manifest, setup.service, setup.workDir, setup.volume, setup.sink, setup.events);
		const completions = manifest.spec.completions!;
		const indexes = Array.from({ length: completions }, (_, index) => index);
		// Index 0's first pod is killed once 4 records are on the volume.
		const outcomes = await Promise.all(
			indexes.map((index) =>
				runLikeTheJobController(manifest, pod, { index, ...(index === 0 ? { killFirstAfterRecords: 4 } : {}) }),
			),
		);
		expect(
			outcomes.map((outcome) => outcome.outcome),
			setup.events.join("\n"),
		).toEqual(indexes.map(() => "Succeeded"));
		expect(outcomes.map((outcome) => outcome.pods)).toEqual(indexes.map((index) => (index === 0 ? 2 : 1)));
		const folders = runFolders(setup.volume);
		expect(folders).toHaveLength(completions);
		for (const index of indexes)
			expect(folders.filter((name) => name.endsWith(`-shard-${index + 1}-of-${completions}`))).toHaveLength(1);
		const records = recordsOnVolume(setup.volume);
		expect(records).toHaveLength(48);
		expect(new Set(records.map((record) => record.url))).toEqual(new Set(targets));
		const charges = chargesByUrl(setup.service);
		expect([...charges.values()].filter((count) => count > 1).length).toBeLessThanOrEqual(2);
		const paid = setup.service.emulator.ledger.totalCharged();

		const again = await Promise.all(indexes.map((index) => runLikeTheJobController(manifest, pod, { index })));
		expect(again.map((outcome) => outcome.outcome)).toEqual(indexes.map(() => "Succeeded"));
		expect(runFolders(setup.volume)).toHaveLength(2 * completions);
		expect(setup.service.emulator.ledger.totalCharged()).toBe(paid);
	}, 90_000);

	it("fleet-job.yaml: 4 pods share one fleet run; a killed pod's replacement pays nothing twice; the Job applied again finds its run complete and pays nothing", async () => {
		const manifest = manifestOf("fleet-job.yaml");
		const setup = await setUp();
		const fleetUrl = await (await cluster()).createDatabase();
		const targets = products(setup.service, 40);
		writeShopJob(setup, targets);
		const pod = await podOf(manifest, setup.service, setup.workDir, setup.volume, setup.sink, setup.events, fleetUrl);
		const parallelism = manifest.spec.parallelism!;
		// The first pod is killed once 6 records are written (a node died); the controller starts another.
		const outcomes = await Promise.all(
			Array.from({ length: parallelism }, (_, index) =>
				runLikeTheJobController(manifest, pod, index === 0 ? { killFirstAfterRecords: 6 } : {}),
			),
		);
		expect(
			outcomes.map((outcome) => outcome.outcome),
			setup.events.join("\n"),
		).toEqual(outcomes.map(() => "Succeeded"));
		expect(outcomes[0]!.pods).toBe(2);
		const records = await fleetRecords(fleetUrl);
		expect(records.sort()).toEqual([...targets].sort());
		// Each target paid once; only fetches in flight at the kill (at most the key's concurrency, 2) twice.
		const charges = chargesByUrl(setup.service);
		expect([...charges.values()].every((count) => count <= 2)).toBe(true);
		expect([...charges.values()].filter((count) => count > 1).length).toBeLessThanOrEqual(2);
		const paid = setup.service.emulator.ledger.totalCharged();

		// `kubectl apply` again, or a retry after the end: the run of the Job's name is complete, nothing paid.
		const again = await runLikeTheJobController(manifest, pod);
		expect(again).toEqual({ outcome: "Succeeded", pods: 1 });
		expect(setup.service.emulator.ledger.totalCharged()).toBe(paid);
	}, 90_000);
});
