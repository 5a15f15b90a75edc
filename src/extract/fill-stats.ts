/**
 * Fill rates of extracted fields over ok records (`extract_checks.min_fill`): how often each field
 * found something. A required field below `min_fill` fails the run's checks (exit 1).
 */
export interface FieldFill {
	/** Ok records in which the field had a value. */
	filled: number;
	/** `filled` / ok records with extraction; null before the first. */
	fill_rate: number | null;
	required: boolean;
}

export interface ExtractSummary {
	/** Ok records whose data was counted. */
	records: number;
	fields: Record<string, FieldFill>;
	min_fill: number | null;
	/** Required fields filled in fewer than `min_fill` of the records (empty when the checks pass). */
	below_min_fill: string[];
}

export interface FillStats {
	/** Count one ok record's data. */
	add(data: Readonly<Record<string, unknown>> | undefined): void;
	summary(): ExtractSummary;
}

export interface FillField {
	readonly name: string;
	readonly required: boolean;
}

/** `prior` carries the counts of a resumed run's earlier records, so rates are over the whole run. */
export function createFillStats(
	fields: readonly FillField[],
	minFill: number | null,
	prior?: { records: number; filled: Readonly<Record<string, number>> },
): FillStats {
	const filled = new Map<string, number>(fields.map((field) => [field.name, prior?.filled[field.name] ?? 0]));
	let records = prior?.records ?? 0;
	return {
		add(data) {
			records++;
			if (!data) return;
			for (const field of fields) {
				const value = data[field.name];
				if (isFilled(value)) filled.set(field.name, filled.get(field.name)! + 1);
			}
		},
		summary() {
			const out: Record<string, FieldFill> = {};
			const below: string[] = [];
			for (const field of fields) {
				const count = filled.get(field.name) ?? 0;
				const rate = records === 0 ? null : Math.round((count / records) * 10_000) / 10_000;
				out[field.name] = { filled: count, fill_rate: rate, required: field.required };
				if (field.required && minFill !== null && records > 0 && count / records < minFill) below.push(field.name);
			}
			return { records, fields: out, min_fill: minFill, below_min_fill: below };
		},
	};
}

/** Found something: not null or "", and a list (`all: true`) with at least one non-empty item. */
export function isFilled(value: unknown): boolean {
	if (value === null || value === undefined || value === "") return false;
	return !Array.isArray(value) || value.some((item) => item !== "" && item !== null);
}
