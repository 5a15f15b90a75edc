import {
	compileFields,
	type ExtractPlan,
	type FieldInput,
	type FieldRules,
	fieldRulesOf,
	serviceColumns,
} from "../extract/index.js";

type FieldSpecs = Readonly<Record<string, FieldInput>>;

/** What the runner needs to know about a job's extraction as a whole (columns, checks). */
export interface JobExtraction {
	/** `data` keys that get a CSV column, in declared order: local fields, then service-side labels. */
	readonly dataColumns: readonly string[];
	/** Carried source columns (`carry:`), after the data columns in the CSV. */
	readonly carry: readonly string[];
	/** Local fields (every place they are declared), for fill rates; `required` if required anywhere. */
	readonly fields: ReadonlyArray<{ readonly name: string; readonly required: boolean }>;
	/** `extract_checks.min_fill`, or null. */
	readonly minFill: number | null;
	/** The job's own fields (`extract:` and `defaults.extract`), compiled: what re-extraction reads stored pages with. */
	readonly plan: ExtractPlan | null;
}

/**
 * The job's data contract (docs/guides/extraction.md, "Re-extraction and data contracts"): field rules and `extract_checks`, judged when a run
 * completes. A run that breaks it is complete but not promoted to "latest" in the job's history.
 */
export interface JobContract {
	/** Fields' `pattern`, `min`, `max`, `min_length` (a field declared in several places: each place's rules). */
	readonly fieldRules: readonly FieldRules[];
	readonly minFill: number | null;
	readonly maxFillDrop: number | null;
	readonly maxRowsDrop: number | null;
	readonly maxChanged: number | null;
}

/** The contract of a job file's rules and checks, or null when it declares none (every run is promoted). */
export function contractOf(
	fieldRules: readonly FieldRules[],
	checks: { min_fill?: number; max_fill_drop?: number; max_rows_drop?: number; max_changed?: number } | undefined,
): JobContract | null {
	const contract: JobContract = {
		fieldRules,
		minFill: checks?.min_fill ?? null,
		maxFillDrop: checks?.max_fill_drop ?? null,
		maxRowsDrop: checks?.max_rows_drop ?? null,
		maxChanged: checks?.max_changed ?? null,
	};
	const judged =
		fieldRules.length > 0 ||
		contract.minFill !== null ||
		contract.maxFillDrop !== null ||
		contract.maxRowsDrop !== null ||
		contract.maxChanged !== null;
	return judged ? contract : null;
}

/**
 * Compiles each distinct field set once: the job's own plan is shared by every target that does not
 * override a field, and a source's plan by all its rows.
 */
export interface ExtractionBuilder {
	/** The plan of a target or source: the job's fields overridden (by name) by its own; null with none. */
	planFor(own: FieldSpecs | undefined): ExtractPlan | null;
	/** Note a place's scrape options, for the CSV columns of service-side extraction. */
	noteServiceOptions(options: object): void;
	readonly carry: readonly string[];
	/** Every field's contract rules, from every place fields are declared. */
	readonly fieldRules: readonly FieldRules[];
	/** Null when the job extracts nothing and carries nothing. */
	finish(): JobExtraction | null;
}

function compileOrThrow(spec: FieldSpecs): ExtractPlan {
	const compiled = compileFields(spec);
	// Validation compiled the same fields already and refused the job if one failed.
	if (!compiled.ok) throw new Error(`extract: ${compiled.problems.map((p) => `${p.field}: ${p.message}`).join("; ")}`);
	return compiled.plan;
}

export function createExtractionBuilder(input: {
	extract?: FieldSpecs | undefined;
	defaultsExtract?: FieldSpecs | undefined;
	minFill?: number | undefined;
	carry?: readonly string[] | undefined;
}): ExtractionBuilder {
	// `defaults.extract` and the top-level `extract` are the same level; defaults win by name.
	const jobSpec: FieldSpecs = { ...input.extract, ...input.defaultsExtract };
	const jobPlan = Object.keys(jobSpec).length > 0 ? compileOrThrow(jobSpec) : null;
	const localColumns: string[] = [];
	const required = new Map<string, boolean>();
	const serviceLabels: string[] = [];
	const fieldRules: FieldRules[] = [];
	const ruleKeys = new Set<string>();
	const noteFields = (spec: FieldSpecs) => {
		for (const [name, field] of Object.entries(spec)) {
			const rules = fieldRulesOf(name, field);
			const ruleKey = rules ? JSON.stringify([name, field]) : "";
			if (rules && !ruleKeys.has(ruleKey)) {
				ruleKeys.add(ruleKey);
				fieldRules.push(rules);
			}
			if (!required.has(name)) localColumns.push(name);
			const isRequired = typeof field === "object" && field.required === true;
			required.set(name, (required.get(name) ?? false) || isRequired);
		}
	};
	noteFields(jobSpec);
	const carry = [...(input.carry ?? [])];
	let usesSavedScheme = false;
	return {
		carry,
		fieldRules,
		planFor(own) {
			if (!own || Object.keys(own).length === 0) return jobPlan;
			noteFields(own);
			return compileOrThrow({ ...jobSpec, ...own });
		},
		noteServiceOptions(options) {
			for (const label of serviceColumns(options)) if (!serviceLabels.includes(label)) serviceLabels.push(label);
			// A saved scheme's labels are the account's, not known here: its results still land in `data`.
			if (typeof (options as { scheme_id?: unknown }).scheme_id === "string") usesSavedScheme = true;
		},
		finish() {
			const dataColumns = [...localColumns, ...serviceLabels.filter((label) => !required.has(label))];
			if (dataColumns.length === 0 && carry.length === 0 && !usesSavedScheme) return null;
			return {
				dataColumns,
				carry,
				fields: localColumns.map((name) => ({ name, required: required.get(name) ?? false })),
				minFill: input.minFill ?? null,
				plan: jobPlan,
			};
		},
	};
}
