import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CronJob } from "kubernetes-models/batch/v1/CronJob";
import { Job } from "kubernetes-models/batch/v1/Job";
import ts from "typescript";

/** The parts of a Job or CronJob manifest the checks below read (the schema check reads all of it). */
export interface Container {
	name: string;
	command?: string[];
	args?: string[];
	env?: Array<{
		name: string;
		value?: string;
		valueFrom?: { secretKeyRef?: { name: string; key: string }; fieldRef?: { fieldPath: string } };
	}>;
	volumeMounts?: Array<{ name: string; mountPath: string }>;
}

interface PodFailurePolicyRule {
	action: string;
	onExitCodes?: { containerName?: string; operator: string; values: number[] };
	onPodConditions?: Array<{ type: string; status?: string }>;
}

export interface JobSpec {
	completionMode?: string;
	completions?: number;
	parallelism?: number;
	backoffLimit?: number;
	backoffLimitPerIndex?: number;
	maxFailedIndexes?: number;
	podReplacementPolicy?: string;
	podFailurePolicy?: { rules: PodFailurePolicyRule[] };
	successPolicy?: unknown;
	activeDeadlineSeconds?: number;
	template: {
		spec: {
			restartPolicy?: string;
			terminationGracePeriodSeconds?: number;
			containers: Container[];
			initContainers?: Container[];
		};
	};
}

export interface Manifest {
	apiVersion: string;
	kind: string;
	metadata: { name: string };
	spec: JobSpec & {
		schedule?: string;
		timeZone?: string;
		concurrencyPolicy?: string;
		startingDeadlineSeconds?: number;
		jobTemplate?: { spec: JobSpec };
	};
}

/** The Job spec of a Job, or of a CronJob's template. */
export function jobSpecOf(manifest: Manifest): JobSpec {
	if (manifest.kind === "CronJob") {
		if (!manifest.spec.jobTemplate) throw new Error(`${manifest.metadata.name}: a CronJob without jobTemplate`);
		return manifest.spec.jobTemplate.spec;
	}
	return manifest.spec;
}

/**
 * The OpenAPI schema of the Kubernetes release kubernetes-models was generated from (types, enums,
 * required fields), then the manifest as a typed object literal through TypeScript: a field the API
 * does not have is an excess property, which `kubectl apply` (strict field validation) refuses too.
 */
export function schemaProblems(manifests: ReadonlyArray<{ file: string; manifest: Manifest }>): string[] {
	const problems: string[] = [];
	for (const { file, manifest } of manifests) {
		try {
			if (manifest.kind === "CronJob") new CronJob(manifest as never).validate();
			else if (manifest.kind === "Job") new Job(manifest as never).validate();
			else problems.push(`${file}: kind ${manifest.kind} is not checked here`);
		} catch (error) {
			problems.push(`${file}: ${(error as Error).message}`);
		}
	}
	const dir = mkdtempSync(join(tmpdir(), "k8s-fields-"));
	const source = join(dir, "manifests.ts");
	writeFileSync(
		source,
		[
			'import type { ICronJob } from "kubernetes-models/batch/v1/CronJob";',
			'import type { IJob } from "kubernetes-models/batch/v1/Job";',
			...manifests.map(
				({ manifest }, index) =>
					`export const m${index}: ${manifest.kind === "CronJob" ? "ICronJob" : "IJob"} = ${JSON.stringify(manifest)};`,
			),
		].join("\n"),
	);
	const program = ts.createProgram([source], {
		strict: true,
		noEmit: true,
		skipLibCheck: true,
		module: ts.ModuleKind.NodeNext,
		moduleResolution: ts.ModuleResolutionKind.NodeNext,
		target: ts.ScriptTarget.ES2022,
		types: [],
		// Resolve kubernetes-models from the repository, not from the temporary folder.
		baseUrl: join(import.meta.dirname, "..", ".."),
		paths: { "kubernetes-models/*": [join(import.meta.dirname, "..", "..", "node_modules", "kubernetes-models", "*")] },
	});
	for (const diagnostic of ts.getPreEmitDiagnostics(program)) {
		const line = diagnostic.file?.getLineAndCharacterOfPosition(diagnostic.start ?? 0).line ?? 0;
		const file = manifests[line - 2]?.file ?? "manifests";
		problems.push(`${file}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n")}`);
	}
	return problems;
}

const POD_FAILURE_ACTIONS = ["FailJob", "FailIndex", "Ignore", "Count"];

/**
 * Rules the API server enforces on a Job that its OpenAPI schema cannot say (batch validation of
 * Kubernetes 1.33+): what each field requires of the others.
 */
export function serverRuleProblems(file: string, manifest: Manifest): string[] {
	const problems: string[] = [];
	const say = (message: string) => problems.push(`${file}: ${message}`);
	const spec = jobSpecOf(manifest);
	const pod = spec.template.spec;
	const restartPolicy = pod.restartPolicy ?? "Always";
	if (restartPolicy !== "Never" && restartPolicy !== "OnFailure")
		say(`a Job's pods need restartPolicy Never or OnFailure, not ${restartPolicy}`);
	if (spec.completionMode === "Indexed" && spec.completions === undefined)
		say("completionMode Indexed needs completions");
	if (spec.backoffLimitPerIndex !== undefined) {
		if (spec.completionMode !== "Indexed") say("backoffLimitPerIndex needs completionMode Indexed");
		if (restartPolicy !== "Never") say(`backoffLimitPerIndex needs restartPolicy Never, not ${restartPolicy}`);
	}
	if (spec.maxFailedIndexes !== undefined) {
		if (spec.backoffLimitPerIndex === undefined) say("maxFailedIndexes needs backoffLimitPerIndex");
		if (spec.completions !== undefined && spec.maxFailedIndexes > spec.completions)
			say("maxFailedIndexes must not exceed completions");
	}
	if (spec.successPolicy !== undefined && spec.completionMode !== "Indexed")
		say("successPolicy needs completionMode Indexed");
	if (
		spec.podReplacementPolicy !== undefined &&
		spec.podReplacementPolicy !== "Failed" &&
		spec.podReplacementPolicy !== "TerminatingOrFailed"
	)
		say(`podReplacementPolicy ${spec.podReplacementPolicy} is not Failed or TerminatingOrFailed`);
	const policy = spec.podFailurePolicy;
	if (policy) {
		if (restartPolicy !== "Never") say(`podFailurePolicy needs restartPolicy Never, not ${restartPolicy}`);
		if (spec.podReplacementPolicy !== undefined && spec.podReplacementPolicy !== "Failed")
			say(`with podFailurePolicy, podReplacementPolicy must be Failed, not ${spec.podReplacementPolicy}`);
		if (policy.rules.length > 20) say("podFailurePolicy has more than 20 rules");
		const containers = new Set([...pod.containers, ...(pod.initContainers ?? [])].map((container) => container.name));
		for (const [index, rule] of policy.rules.entries()) {
			const where = `podFailurePolicy.rules[${index}]`;
			if (!POD_FAILURE_ACTIONS.includes(rule.action)) say(`${where}: unknown action ${rule.action}`);
			if (rule.action === "FailIndex" && spec.backoffLimitPerIndex === undefined)
				say(`${where}: FailIndex needs backoffLimitPerIndex`);
			if ((rule.onExitCodes === undefined) === (rule.onPodConditions === undefined))
				say(`${where}: exactly one of onExitCodes and onPodConditions`);
			const codes = rule.onExitCodes;
			if (codes) {
				if (codes.operator !== "In" && codes.operator !== "NotIn") say(`${where}: operator ${codes.operator}`);
				if (codes.values.length === 0 || codes.values.length > 255) say(`${where}: 1 to 255 exit codes`);
				if (codes.operator === "In" && codes.values.includes(0)) say(`${where}: operator In cannot hold exit code 0`);
				for (let at = 1; at < codes.values.length; at += 1)
					if (codes.values[at]! <= codes.values[at - 1]!) say(`${where}: exit codes must be unique and ascending`);
				if (codes.containerName !== undefined && !containers.has(codes.containerName))
					say(`${where}: no container named ${codes.containerName}`);
			}
			for (const condition of rule.onPodConditions ?? []) {
				if (condition.status !== undefined && !["True", "False", "Unknown"].includes(condition.status))
					say(`${where}: condition status ${condition.status}`);
			}
		}
	}
	if (manifest.kind === "CronJob") {
		const { concurrencyPolicy, schedule, timeZone, startingDeadlineSeconds } = manifest.spec;
		if (concurrencyPolicy !== undefined && !["Allow", "Forbid", "Replace"].includes(concurrencyPolicy))
			say(`concurrencyPolicy ${concurrencyPolicy}`);
		if (schedule === undefined || schedule.trim().split(/\s+/).length !== 5)
			say(`schedule ${schedule} is not 5 fields`);
		if (schedule?.includes("TZ")) say("the time zone goes in timeZone, not in the schedule");
		if (timeZone !== undefined && !Intl.supportedValuesOf("timeZone").includes(timeZone) && timeZone !== "Etc/UTC")
			say(`timeZone ${timeZone} is not a known time zone`);
		if (startingDeadlineSeconds !== undefined && startingDeadlineSeconds < 0) say("startingDeadlineSeconds < 0");
		// The controller appends an 11-character suffix to the Job's name, itself a label value (≤ 63).
		if (manifest.metadata.name.length > 52) say("a CronJob's name is at most 52 characters");
	} else if (manifest.metadata.name.length > 63) say("a Job's name is at most 63 characters");
	return problems;
}

/**
 * What the Job controller does with a pod that ended with `exitCode` (or a signal, 128 + its number):
 * the first podFailurePolicy rule that matches, else Count (a retry while backoffLimit allows).
 */
export function podFailureAction(spec: JobSpec, containerName: string, exitCode: number): string {
	if (exitCode === 0) return "Succeeded";
	for (const rule of spec.podFailurePolicy?.rules ?? []) {
		const codes = rule.onExitCodes;
		if (!codes || (codes.containerName !== undefined && codes.containerName !== containerName)) continue;
		const listed = codes.values.includes(exitCode);
		if (codes.operator === "In" ? listed : !listed) return rule.action;
	}
	return "Count";
}

/**
 * Kubernetes' `$(NAME)` expansion in command and args, from the container's env: `$$` is a literal
 * `$`, and a name not in the env stays as written.
 */
export function expandKubernetesVariables(word: string, env: Readonly<Record<string, string>>): string {
	return word.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (match, name: string | undefined) =>
		match === "$$" ? "$" : name !== undefined && env[name] !== undefined ? env[name] : match,
	);
}
