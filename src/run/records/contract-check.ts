import { basename, dirname } from "node:path";
import { isServiceSideKind } from "../../api/index.js";
import { jsonlLines, parseJsonLine } from "../../common/index.js";
import { brokenRule, type FieldRule } from "../../extract/index.js";
import { promotedSummaries } from "../../history/index.js";
import type { JobContract } from "../../job/index.js";
import type { BrokenRule, ContractVerdict, ResultRecord, RunSummary } from "../../output/index.js";

/** How many earlier complete runs `max_fill_drop` and `max_rows_drop` compare with. */
export const BASELINE_RUNS = 5;

/**
 * The job's data contract over one run (docs/guides/extraction.md, "Re-extraction and data contracts"): field rules are checked on every ok
 * record as it is written (counted, with the first offender; nothing held per record), and the
 * job-level checks are judged once the run completes, from its summary and the summaries of the job's
 * last promoted runs.
 */
export function createContractCheck(contract: JobContract) {
	const broken = new Map<
		string,
		{ field: string; rule: FieldRule; records: number; example: { id: string; value: unknown } }
	>();
	const add = (record: ResultRecord) => {
		if (record.status !== "ok" || !record.data) return;
		for (const rules of contract.fieldRules) {
			const value = record.data[rules.name];
			const rule = brokenRule(rules, value);
			if (rule === null) continue;
			const key = `${rules.name}\u0000${rule}`;
			const seen = broken.get(key);
			if (seen) seen.records += 1;
			else broken.set(key, { field: rules.name, rule, records: 1, example: { id: record.id, value } });
		}
	};
	const limitOf = (field: string, rule: FieldRule): number | string => {
		for (const rules of contract.fieldRules) {
			if (rules.name !== field) continue;
			if (rule === "pattern" && rules.pattern) return rules.pattern.source;
			if (rule === "min" && rules.min !== null) return rules.min;
			if (rule === "max" && rules.max !== null) return rules.max;
			if (rule === "min_length" && rules.minLength !== null) return rules.minLength;
		}
		return "";
	};
	return {
		/** Check one record just written (ok records with data only). */
		add,
		/** A resumed run: the records of its earlier sessions, read back from its results.jsonl. */
		async replay(jsonlPath: string): Promise<void> {
			for (const { text } of jsonlLines(jsonlPath)) {
				if (!text.includes('"status":"ok"')) continue;
				// Not a record: passed over (a torn line was cut by the resume already).
				const record = parseJsonLine(text) as ResultRecord | null | undefined;
				if (typeof record === "object" && record !== null) add(record);
			}
		},
		/**
		 * The verdict of a completed run. `deselected`: targets the run left out on purpose (fresh ones,
		 * the not-failed ones of `--retry-failed`), whose values stand: they count as rows.
		 */
		judge(summary: RunSummary, baseline: readonly RunSummary[], deselected: number): ContractVerdict {
			const rules: BrokenRule[] = [];
			for (const entry of broken.values()) {
				const limit = limitOf(entry.field, entry.rule);
				rules.push({
					rule: entry.rule,
					field: entry.field,
					limit,
					records: entry.records,
					example: entry.example,
					message: `${entry.field}: ${entry.records === 1 ? "1 value breaks" : `${entry.records} values break`} ${entry.rule} ${typeof limit === "string" ? JSON.stringify(limit) : limit} (first: ${entry.example.id} = ${short(entry.example.value)})`,
				});
			}
			const extract = summary.extract;
			if (contract.minFill !== null && extract) {
				for (const field of extract.below_min_fill) {
					const actual = extract.fields[field]?.fill_rate ?? 0;
					rules.push({
						rule: "min_fill",
						field,
						limit: contract.minFill,
						actual,
						message: `${field}: filled in ${percent(actual)} of ok records, below min_fill ${percent(contract.minFill)}`,
					});
				}
			}
			if (contract.maxFillDrop !== null && extract) {
				for (const [field, fill] of Object.entries(extract.fields)) {
					const earlier = baseline
						.map((run) => run.extract?.fields[field]?.fill_rate)
						.filter((rate): rate is number => typeof rate === "number");
					if (earlier.length === 0 || fill.fill_rate === null) continue;
					const mean = earlier.reduce((sum, rate) => sum + rate, 0) / earlier.length;
					if (mean - fill.fill_rate > contract.maxFillDrop + 1e-9) {
						rules.push({
							rule: "max_fill_drop",
							field,
							limit: contract.maxFillDrop,
							actual: fill.fill_rate,
							baseline: round(mean),
							message: `${field}: filled in ${percent(fill.fill_rate)} of ok records, ${percent(mean - fill.fill_rate)} below its mean ${percent(mean)} over the last ${earlier.length === 1 ? "run" : `${earlier.length} runs`} (max_fill_drop ${percent(contract.maxFillDrop)})`,
						});
					}
				}
			}
			const rows = summary.targets.by_status.ok + deselected;
			if (contract.maxRowsDrop !== null) {
				const earlier = baseline.map(rowsOf);
				if (earlier.length > 0) {
					const mean = earlier.reduce((sum, count) => sum + count, 0) / earlier.length;
					const drop = mean > 0 ? (mean - rows) / mean : 0;
					if (drop > contract.maxRowsDrop + 1e-9) {
						rules.push({
							rule: "max_rows_drop",
							limit: contract.maxRowsDrop,
							actual: rows,
							baseline: round(mean),
							message: `${rows} ok rows, ${percent(drop)} below the mean ${round(mean)} over the last ${earlier.length === 1 ? "run" : `${earlier.length} runs`} (max_rows_drop ${percent(contract.maxRowsDrop)})`,
						});
					}
				}
			}
			const changes = summary.changes;
			if (contract.maxChanged !== null && changes) {
				const stamped = changes.new + changes.changed + changes.unchanged;
				const share = stamped > 0 ? changes.changed / stamped : 0;
				if (share > contract.maxChanged + 1e-9) {
					rules.push({
						rule: "max_changed",
						limit: contract.maxChanged,
						actual: round(share),
						message: `${changes.changed} of ${stamped} ok records changed (${percent(share)}), above max_changed ${percent(contract.maxChanged)}`,
					});
				}
			}
			const serviceFailed = failedOnServiceSide(summary);
			if (serviceFailed !== null) {
				rules.push({
					rule: "service_failed",
					limit: 0,
					actual: summary.targets.by_status.failed,
					message: `every target failed on the service's side (${serviceFailed}), which says nothing of the pages: check the scraper URL and the service`,
				});
			}
			return { passed: rules.length === 0, broken: rules, baseline_runs: baseline.map((run) => run.run_id), rows };
		},
	};
}
export type ContractCheck = ReturnType<typeof createContractCheck>;

/**
 * Judge a completed run (`runDir`) on the job's contract against the job's last promoted runs, and write
 * the verdict into its summary: `contract`, and `stopped_reason: contract_failed` when it broke it.
 * Returns the verdict and, when broken, the message the run stops with. `what`: "run" or "re-extraction".
 */
export function judgeCompletedRun(
	contract: ContractCheck,
	summary: RunSummary,
	runDir: string,
	deselected: number,
	what: string,
): { verdict: ContractVerdict; brokenMessage: string | null } {
	const verdict = contract.judge(
		summary,
		// A run of a job without a contract is promoted as written, even one whose every target failed
		// on the service's side: its 0 rows would lower the baseline a contract added since measures against.
		promotedSummaries(dirname(runDir), basename(runDir), BASELINE_RUNS, (run) => failedOnServiceSide(run) === null),
		deselected,
	);
	summary.contract = verdict;
	if (verdict.passed) return { verdict, brokenMessage: null };
	summary.stopped_reason = "contract_failed";
	return {
		verdict,
		brokenMessage: `the ${what} broke the job's data contract: its records are not promoted to latest (${verdict.broken.map((rule) => rule.message).join("; ")})`,
	};
}

/** The error kinds in words when no target was ok and every failure was the service's; else null. */
function failedOnServiceSide(summary: RunSummary): string | null {
	const { ok, failed } = summary.targets.by_status;
	const kinds = Object.entries(summary.errors_by_kind);
	if (ok > 0 || failed === 0 || kinds.length === 0) return null;
	if (!kinds.every(([kind]) => isServiceSideKind(kind))) return null;
	return kinds.map(([kind, count]) => `${kind} ${count}`).join(", ");
}

/** An earlier run's rows: what its verdict counted, else its ok records and the fresh targets it left out. */
function rowsOf(summary: RunSummary): number {
	return summary.contract?.rows ?? summary.targets.by_status.ok + (summary.targets.fresh ?? 0);
}

function round(value: number): number {
	return Math.round(value * 10_000) / 10_000;
}

function percent(rate: number): string {
	return `${Math.round(rate * 1000) / 10}%`;
}

function short(value: unknown): string {
	const text = JSON.stringify(value) ?? "null";
	return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}
