import { compileFields, type ExtractPlan, type FieldInput, serviceColumns } from "../extract/index.js";

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
	const noteFields = (spec: FieldSpecs) => {
		for (const [name, field] of Object.entries(spec)) {
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
			};
		},
	};
}
