import { RECORD_COLUMNS } from "../common/index.js";
import type { DataPath } from "./positions.js";
import type { PathProblem } from "./zod-issues.js";

/**
 * Names that become columns (docs/reference/limits.md): extract fields, `extract_scheme`
 * labels and `carry` names are a JSON key of each record, a CSV header cell and a column of the
 * SQLite export. So they are plain identifiers, never a name JavaScript objects give meaning to, and
 * unique ignoring case (SQLite column names and many spreadsheet tools ignore case).
 */

/**
 * Names a field, label or carried column may not take: the record's own fields and CSV columns
 * (common/record-columns.ts, the CSV header's list too), and the keys a record may carry beside them
 * (`added_fields`, which change tracking writes where a carried column of that name would be), compared
 * ignoring case.
 */
export const RESERVED_COLUMN_NAMES = [...RECORD_COLUMNS, "data", "content", "added_fields"] as const;

/** `[A-Za-z_][A-Za-z0-9_]*`, at most 64 characters. */
export const COLUMN_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
export const COLUMN_NAME_RULE =
	"names are 1–64 letters, digits or '_', starting with a letter or '_' (each is a JSON key and a CSV column)";
/** Keys JavaScript objects give meaning to: as a record key they vanish or change the object. */
export const FORBIDDEN_COLUMN_NAMES = ["__proto__", "constructor", "prototype"] as const;

export type ColumnKind = "extract field" | "extract_scheme label" | "carried column" | "ai_enhance output";

const RESERVED = new Set<string>(RESERVED_COLUMN_NAMES);

/** What is wrong with one name on its own, or null. */
export function columnNameProblem(name: string): string | null {
	if ((FORBIDDEN_COLUMN_NAMES as readonly string[]).includes(name)) {
		return `${JSON.stringify(name)} is not allowed as a name (it has a meaning in JavaScript objects)`;
	}
	if (!COLUMN_NAME_PATTERN.test(name)) return `${JSON.stringify(name)}: ${COLUMN_NAME_RULE}`;
	const folded = name.toLowerCase();
	if (RESERVED.has(folded)) {
		const same = folded === name ? "" : ` (${JSON.stringify(folded)}: names are compared ignoring case)`;
		return `${JSON.stringify(name)} is a record field already${same}: choose another name (it would be a second column of that name)`;
	}
	return null;
}

interface Seen {
	readonly name: string;
	readonly kind: ColumnKind;
	readonly path: DataPath;
}

/**
 * Every column name of a job, noted as validation walks the file: a name already noted in another
 * spelling, or by another kind, is a problem at the later place. The same field name in several
 * `extract:` places is an override (one column), and so is the same label in several schemes.
 */
export function createColumnNames(problems: PathProblem[]) {
	const seen = new Map<string, Seen>();
	return {
		/** Note one name; false when it was refused (so callers skip further checks of it). */
		note(name: string, kind: ColumnKind, path: DataPath, atKey = false): boolean {
			const problem = columnNameProblem(name);
			if (problem) {
				problems.push({ path, atKey, message: problem });
				return false;
			}
			const folded = name.toLowerCase();
			const first = seen.get(folded);
			if (!first) {
				seen.set(folded, { name, kind, path });
				return true;
			}
			if (first.name === name && first.kind === kind && kind !== "carried column") return true;
			const spelled = first.name === name ? "" : ` as ${JSON.stringify(first.name)}`;
			if (kind === "carried column" && first.kind === kind) {
				problems.push({ path, atKey, message: `${JSON.stringify(name)} is carried twice${spelled}` });
				return false;
			}
			problems.push({
				path,
				atKey,
				message: `${JSON.stringify(name)} is also ${article(first.kind)}${spelled}: one column cannot hold both (names are unique ignoring case)`,
			});
			return false;
		},
	};
}

function article(kind: ColumnKind): string {
	switch (kind) {
		case "extract field":
			return "an extract field";
		case "carried column":
			return "a carried column";
		case "ai_enhance output":
			return "the column of ai_enhance's output";
		default:
			return "an extract_scheme label";
	}
}
