import { AI_DATA_KEY, compileField, type FieldInput } from "../extract/index.js";
import { createColumnNames } from "./column-names.js";
import { inferSourceFormat } from "./normalize.js";
import type { DataPath } from "./positions.js";
import type { PathProblem } from "./zod-issues.js";

type Plain = Record<string, unknown>;

function isPlainObject(value: unknown): value is Plain {
	return value !== null && typeof value === "object" && !Array.isArray(value);
}

function isFieldInput(value: unknown): value is FieldInput {
	return typeof value === "string" || isPlainObject(value);
}

type ColumnNames = ReturnType<typeof createColumnNames>;

/** Field names, then every selector and regex compiled, each problem at its key. */
function checkFields(path: DataPath, extract: unknown, names: ColumnNames, problems: PathProblem[]): void {
	if (!isPlainObject(extract)) return;
	for (const [name, field] of Object.entries(extract)) {
		const fieldPath = [...path, name];
		if (!names.note(name, "extract field", fieldPath, true)) continue;
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

/** The top-level `label`s of an `extract_scheme` (a list of rules, or one rule), each with its path. */
function schemeLabels(path: DataPath, scheme: unknown): Array<{ label: string; path: DataPath }> {
	const labelOf = (rule: unknown, rulePath: DataPath) =>
		isPlainObject(rule) && typeof rule.label === "string" && rule.label !== ""
			? [{ label: rule.label, path: [...rulePath, "label"] }]
			: [];
	if (Array.isArray(scheme)) return scheme.flatMap((rule: unknown, index) => labelOf(rule, [...path, index]));
	return labelOf(scheme, path);
}

/** Labels of one scheme: each a column name, and not twice in the same scheme. */
function checkLabels(path: DataPath, scheme: unknown, names: ColumnNames, problems: PathProblem[]): void {
	const inThisScheme = new Set<string>();
	for (const { label, path: labelPath } of schemeLabels([...path, "extract_scheme"], scheme)) {
		if (inThisScheme.has(label)) {
			problems.push({
				path: labelPath,
				message: `label ${JSON.stringify(label)} is used twice in this extract_scheme`,
			});
			continue;
		}
		inThisScheme.add(label);
		names.note(label, "extract_scheme label", labelPath);
	}
}

function hasFields(extract: unknown): boolean {
	return isPlainObject(extract) && Object.keys(extract).length > 0;
}

/**
 * Local `extract:` reads the page the service sends; with `delivery: json` the body carries it only
 * with `include_content: true`, else every field would be null. Said where the place sets one of the
 * three keys (a target that only inherits the problem from `defaults` was reported there).
 */
function checkJsonDelivery(
	path: DataPath,
	place: Plain,
	inherited: Plain,
	jobExtracts: boolean,
	problems: PathProblem[],
): void {
	const own = (key: string) => (Object.hasOwn(place, key) ? place[key] : inherited[key]);
	if (!(jobExtracts || hasFields(place.extract))) return;
	if (own("delivery") !== "json" || own("include_content") === true) return;
	const key = ["include_content", "delivery", "extract"].find((name) => Object.hasOwn(place, name));
	if (key === undefined) return;
	problems.push({
		path: [...path, key],
		atKey: key === "extract",
		message:
			"`extract:` reads the page, and with `delivery: json` the service sends it only with `include_content: true`: set it (or use delivery: raw)",
	});
}

/** Every problem of `extract`, `extract_checks`, `carry` and `id_column` in a job file's data. */
export function checkExtractRules(data: Plain): PathProblem[] {
	const problems: PathProblem[] = [];
	const names = createColumnNames(problems);
	const defaults = isPlainObject(data.defaults) ? data.defaults : {};
	// ai_enhance's answer lands in `data.ai_data` (service-data.ts): a field or label of that name would be
	// overwritten by it, so the name is taken first and each of them is refused where it is written.
	const aiPlace = [
		defaults,
		...(Array.isArray(data.targets) ? data.targets : []),
		...(Array.isArray(data.sources) ? data.sources : []),
	].find((place: unknown) => isPlainObject(place) && place.ai_enhance === true);
	if (aiPlace !== undefined) names.note(AI_DATA_KEY, "ai_enhance output", []);
	checkFields(["extract"], data.extract, names, problems);
	checkFields(["defaults", "extract"], defaults.extract, names, problems);
	const jobExtracts = hasFields(data.extract) || hasFields(defaults.extract);
	checkLabels(["defaults"], defaults.extract_scheme, names, problems);
	checkJsonDelivery(["defaults"], defaults, {}, jobExtracts, problems);
	const targets = Array.isArray(data.targets) ? data.targets : [];
	targets.forEach((target: unknown, index) => {
		if (!isPlainObject(target)) return;
		checkFields(["targets", index, "extract"], target.extract, names, problems);
		checkLabels(["targets", index], target.extract_scheme, names, problems);
		checkJsonDelivery(["targets", index], target, defaults, jobExtracts, problems);
	});
	const sources = Array.isArray(data.sources) ? data.sources : [];
	let csvSources = 0;
	sources.forEach((source: unknown, index) => {
		if (typeof source === "string") return;
		if (!isPlainObject(source)) return;
		checkFields(["sources", index, "extract"], source.extract, names, problems);
		checkLabels(["sources", index], source.extract_scheme, names, problems);
		checkJsonDelivery(["sources", index], source, defaults, jobExtracts, problems);
		const isCsv =
			typeof source.file === "string" && inferSourceFormat(source.file, source.format, source.column) === "csv";
		if (isCsv) csvSources++;
		if (source.id_column !== undefined && !isCsv) {
			problems.push({ path: ["sources", index, "id_column"], message: "`id_column` applies to CSV sources only" });
		}
	});

	const places = [
		data.extract,
		defaults.extract,
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

	const anyFields = places.some((extract) => hasFields(extract));
	if (isPlainObject(data.extract_checks) && data.extract_checks.max_fill_drop !== undefined && !anyFields) {
		problems.push({
			path: ["extract_checks", "max_fill_drop"],
			message: "max_fill_drop watches the fill rates of `extract:` fields, and this job has none",
		});
	}

	if (Array.isArray(data.carry)) {
		data.carry.forEach((name: unknown, index) => {
			if (typeof name === "string") names.note(name, "carried column", ["carry", index]);
		});
		if (data.carry.length > 0 && csvSources === 0) {
			problems.push({ path: ["carry"], message: "`carry` copies columns of CSV sources, and this job has none" });
		}
	}
	return problems;
}
