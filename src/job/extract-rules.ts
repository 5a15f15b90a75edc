import { compileField, FIELD_NAME_PATTERN, FIELD_NAME_RULE, type FieldInput } from "../extract/index.js";
import { inferSourceFormat } from "./normalize.js";
import type { DataPath } from "./positions.js";
import type { PathProblem } from "./zod-issues.js";

/**
 * Names a field or carried column may not take: they are the record's own fields and CSV columns
 * (output/record.ts; a test keeps the two lists equal), and a second column of the same name would
 * make the CSV ambiguous.
 */
export const RESERVED_COLUMN_NAMES = [
	"id",
	"url",
	"status",
	"http_status",
	"error",
	"message",
	"mode_requested",
	"mode_used",
	"credits_used",
	"credits_remaining",
	"attempts",
	"task_id",
	"started_at",
	"finished_at",
	"duration_ms",
	"bytes",
	"content_path",
	"content_hash",
	"change",
	"depth",
	"parent",
	"data",
	"content",
] as const;

type Plain = Record<string, unknown>;

function isPlainObject(value: unknown): value is Plain {
	return value !== null && typeof value === "object" && !Array.isArray(value);
}

function isFieldInput(value: unknown): value is FieldInput {
	return typeof value === "string" || isPlainObject(value);
}

/** Field names, then every selector and regex compiled, each problem at its key. */
function checkFields(path: DataPath, extract: unknown, problems: PathProblem[]): void {
	if (!isPlainObject(extract)) return;
	for (const [name, field] of Object.entries(extract)) {
		const fieldPath = [...path, name];
		if (!FIELD_NAME_PATTERN.test(name)) {
			problems.push({ path: fieldPath, atKey: true, message: `${JSON.stringify(name)}: ${FIELD_NAME_RULE}` });
			continue;
		}
		if ((RESERVED_COLUMN_NAMES as readonly string[]).includes(name)) {
			problems.push({
				path: fieldPath,
				atKey: true,
				message: `${JSON.stringify(name)} is a record field already (a CSV column of its own): choose another name`,
			});
			continue;
		}
		// The schema reports wrong shapes; compile only what has the right one.
		if (!isFieldInput(field)) continue;
		const result = compileField(name, field);
		if (result.ok) continue;
		for (const problem of result.problems) {
			problems.push({
				path: problem.key === null ? fieldPath : [...fieldPath, problem.key],
				message: problem.message,
			});
		}
	}
}

/** Every problem of `extract`, `extract_checks`, `carry` and `id_column` in a job file's data. */
export function checkExtractRules(data: Plain): PathProblem[] {
	const problems: PathProblem[] = [];
	checkFields(["extract"], data.extract, problems);
	if (isPlainObject(data.defaults)) checkFields(["defaults", "extract"], data.defaults.extract, problems);
	const targets = Array.isArray(data.targets) ? data.targets : [];
	targets.forEach((target: unknown, index) => {
		if (isPlainObject(target)) checkFields(["targets", index, "extract"], target.extract, problems);
	});
	const sources = Array.isArray(data.sources) ? data.sources : [];
	let csvSources = 0;
	sources.forEach((source: unknown, index) => {
		if (typeof source === "string") return;
		if (!isPlainObject(source)) return;
		checkFields(["sources", index, "extract"], source.extract, problems);
		const isCsv =
			typeof source.file === "string" && inferSourceFormat(source.file, source.format, source.column) === "csv";
		if (isCsv) csvSources++;
		if (source.id_column !== undefined && !isCsv) {
			problems.push({ path: ["sources", index, "id_column"], message: "`id_column` applies to CSV sources only" });
		}
	});

	const places = [
		data.extract,
		isPlainObject(data.defaults) ? data.defaults.extract : undefined,
		...targets.map((target: unknown) => (isPlainObject(target) ? target.extract : undefined)),
		...sources.map((source: unknown) => (isPlainObject(source) ? source.extract : undefined)),
	];
	const anyRequired = places.some(
		(extract) =>
			isPlainObject(extract) && Object.values(extract).some((field) => isPlainObject(field) && field.required === true),
	);
	if (isPlainObject(data.extract_checks) && data.extract_checks.min_fill !== undefined && !anyRequired) {
		problems.push({
			path: ["extract_checks", "min_fill"],
			message: "min_fill checks the fields marked `required: true`, and no extract field is",
		});
	}

	const fieldNames = new Set<string>();
	for (const extract of [data.extract, isPlainObject(data.defaults) ? data.defaults.extract : undefined]) {
		if (isPlainObject(extract)) for (const name of Object.keys(extract)) fieldNames.add(name);
	}
	if (Array.isArray(data.carry)) {
		const seen = new Set<string>();
		data.carry.forEach((name: unknown, index) => {
			if (typeof name !== "string") return;
			const path = ["carry", index];
			if (seen.has(name)) problems.push({ path, message: `${JSON.stringify(name)} is carried twice` });
			else if ((RESERVED_COLUMN_NAMES as readonly string[]).includes(name)) {
				problems.push({
					path,
					message: `${JSON.stringify(name)} is a record field already: it cannot be carried under that name`,
				});
			} else if (fieldNames.has(name)) {
				problems.push({
					path,
					message: `${JSON.stringify(name)} is also an extract field: one column cannot hold both`,
				});
			}
			seen.add(name);
		});
		if (data.carry.length > 0 && csvSources === 0) {
			problems.push({ path: ["carry"], message: "`carry` copies columns of CSV sources, and this job has none" });
		}
	}
	return problems;
}
