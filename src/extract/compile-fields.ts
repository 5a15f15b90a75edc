import { compileUserRegex, errorMessage, quoteUserRegex, type UserRegex, userRegexProblem } from "../common/index.js";
import { type FieldInput, type FieldType, LOCATORS, type Locator } from "./field-spec.js";
import { type CompiledSelector, compileCss } from "./select.js";

/** One field ready to run: its selector or regex compiled once per job, never per page. */
export type CompiledField = {
	readonly name: string;
	/** The field as written: what a worker thread compiles it from again (a compiled selector cannot cross). */
	readonly input: FieldInput;
	readonly type: FieldType;
	readonly all: boolean;
	readonly required: boolean;
} & (
	| { readonly locator: "css"; readonly selector: CompiledSelector; readonly attr: string | null }
	| { readonly locator: "regex"; readonly regex: UserRegex }
	| { readonly locator: "jsonld"; readonly path: readonly string[] }
	| { readonly locator: "meta"; readonly selector: CompiledSelector }
);

/** The fields of one target (the job's, with its target's or source's overrides), compiled. */
export interface ExtractPlan {
	readonly fields: readonly CompiledField[];
	/** True when a field reads JSON-LD: the page's JSON-LD is then parsed once, on first use. */
	readonly usesJsonLd: boolean;
	/** True when a field needs the parsed document (css, meta, jsonld); regex alone reads the raw body. */
	readonly needsDocument: boolean;
}

/** Something wrong with one field: `key` names the part (`css`, `regex`, …) to point at. */
export interface FieldProblem {
	readonly field: string;
	/** The key inside the field's mapping, or null for the field itself (a shorthand string). */
	readonly key: string | null;
	readonly message: string;
}

/** A CSS string literal for an attribute value (quotes and backslashes escaped). */
function cssString(value: string): string {
	return `"${value.replace(/[\\"]/g, (char) => `\\${char}`).replace(/\n/g, "\\a ")}"`;
}

/**
 * css-what's message with what it found named: at the end of the selector (`a[`) it says
 * "Expected name, found " and then nothing.
 */
function cssProblem(message: string): string {
	return /found\s*$/.test(message) ? `${message.trimEnd()} end of selector` : message;
}

/**
 * A field's contract rules (`pattern`, `min`, `max`, `min_length`) that cannot hold: a regex that does
 * not compile, bounds on a field that is not a number, `min` above `max`.
 */
function contractProblems(
	name: string,
	spec: Exclude<FieldInput, string>,
	type: FieldType,
	at: (key: string) => string | null,
): FieldProblem[] {
	const problems: FieldProblem[] = [];
	if (spec.pattern !== undefined) {
		const problem = userRegexProblem(spec.pattern);
		if (problem !== null) {
			problems.push({
				field: name,
				key: at("pattern"),
				message: `pattern ${quoteUserRegex(spec.pattern)} does not compile: ${problem}`,
			});
		}
	}
	const numeric = type === "number" || type === "integer";
	for (const key of ["min", "max"] as const) {
		if (spec[key] !== undefined && !numeric) {
			problems.push({
				field: name,
				key: at(key),
				message: `\`${key}\` bounds a number: give the field type number or integer (it is ${type})`,
			});
		}
	}
	if (spec.min !== undefined && spec.max !== undefined && spec.min > spec.max) {
		problems.push({
			field: name,
			key: at("max"),
			message: `max ${spec.max} is below min ${spec.min}: no value can pass`,
		});
	}
	if (spec.min_length !== undefined && numeric) {
		problems.push({
			field: name,
			key: at("min_length"),
			message: `\`min_length\` counts characters: a ${type} field has none (use min and max)`,
		});
	}
	return problems;
}

type CompileResult = { ok: true; field: CompiledField } | { ok: false; problems: FieldProblem[] };

/**
 * Compile one field. Every problem is returned (a bad selector and a bad type at once), each
 * naming the key it sits at, so `validate` can point at the exact place in the job file.
 */
export function compileField(name: string, input: FieldInput): CompileResult {
	const spec = typeof input === "string" ? { css: input } : input;
	const at = (key: string) => (typeof input === "string" ? null : key);
	const problems: FieldProblem[] = [];
	const given = LOCATORS.filter((locator) => spec[locator] !== undefined);
	if (given.length === 0) {
		problems.push({ field: name, key: null, message: `needs one of ${LOCATORS.join(", ")}` });
		return { ok: false, problems };
	}
	if (given.length > 1) {
		problems.push({
			field: name,
			key: at(given[1]!),
			message: `has ${given.join(" and ")}: a field reads one locator (make two fields)`,
		});
		return { ok: false, problems };
	}
	const locator = given[0] as Locator;
	const type: FieldType = spec.type ?? "text";
	const all = spec.all === true;
	const required = spec.required === true;
	if (spec.attr !== undefined && locator !== "css") {
		problems.push({ field: name, key: at("attr"), message: "`attr` applies to `css` fields only" });
	}
	if (all && (locator === "jsonld" || locator === "meta")) {
		problems.push({ field: name, key: at("all"), message: `\`all\` applies to css and regex fields (not ${locator})` });
	}
	if (type === "html" && (locator !== "css" || spec.attr !== undefined)) {
		problems.push({
			field: name,
			key: at("type"),
			message: "type html reads an element: use it with `css` and no `attr`",
		});
	}
	problems.push(...contractProblems(name, spec, type, at));
	const base = { name, input, type, all, required };
	let field: CompiledField | undefined;
	switch (locator) {
		case "css": {
			const selector = spec.css ?? "";
			if (selector.trim() === "") {
				problems.push({ field: name, key: at("css"), message: "the CSS selector is empty" });
				break;
			}
			try {
				field = { ...base, locator, selector: compileCss(selector), attr: spec.attr ?? null };
			} catch (error) {
				problems.push({
					field: name,
					key: at("css"),
					message: `CSS selector ${JSON.stringify(selector)} does not compile: ${cssProblem(errorMessage(error))}`,
				});
			}
			break;
		}
		case "regex": {
			const source = spec.regex ?? "";
			try {
				field = { ...base, locator, regex: compileUserRegex(source) };
			} catch (error) {
				problems.push({
					field: name,
					key: at("regex"),
					message: `regex ${quoteUserRegex(source)} does not compile: ${errorMessage(error)}`,
				});
			}
			if (source === "") problems.push({ field: name, key: at("regex"), message: "the regex is empty" });
			break;
		}
		case "jsonld": {
			const path = (spec.jsonld ?? "").split(".");
			if (path.some((segment) => segment === "")) {
				problems.push({
					field: name,
					key: at("jsonld"),
					message: `JSON-LD path ${JSON.stringify(spec.jsonld)} has an empty segment (write it like brand.name)`,
				});
			} else field = { ...base, locator, path };
			break;
		}
		case "meta": {
			const key = spec.meta ?? "";
			if (key.trim() === "") {
				problems.push({ field: name, key: at("meta"), message: "the meta name is empty" });
				break;
			}
			// <meta name=…> and <meta property=…> (Open Graph) alike; matched without regard to case.
			const quoted = cssString(key);
			field = { ...base, locator, selector: compileCss(`meta[name=${quoted} i],meta[property=${quoted} i]`) };
			break;
		}
		default: {
			const unreachable: never = locator;
			throw new Error(`unknown locator ${String(unreachable)}`);
		}
	}
	if (problems.length > 0 || !field) return { ok: false, problems };
	return { ok: true, field };
}

/** Compile every field of a spec (declared order kept); all problems of all fields at once. */
export function compileFields(
	spec: Readonly<Record<string, FieldInput>>,
): { ok: true; plan: ExtractPlan } | { ok: false; problems: FieldProblem[] } {
	const fields: CompiledField[] = [];
	const problems: FieldProblem[] = [];
	for (const [name, input] of Object.entries(spec)) {
		const result = compileField(name, input);
		if (result.ok) fields.push(result.field);
		else problems.push(...result.problems);
	}
	if (problems.length > 0) return { ok: false, problems };
	return { ok: true, plan: planOf(fields) };
}

export function planOf(fields: readonly CompiledField[]): ExtractPlan {
	return {
		fields,
		usesJsonLd: fields.some((field) => field.locator === "jsonld"),
		needsDocument: fields.some((field) => field.locator !== "regex"),
	};
}

const fieldsTexts = new WeakMap<ExtractPlan, string>();

/** A plan's fields as written, as one JSON text (made once per plan): how it travels to a worker. */
export function fieldsTextOf(plan: ExtractPlan): string {
	let text = fieldsTexts.get(plan);
	if (text === undefined) {
		text = JSON.stringify(Object.fromEntries(plan.fields.map((field) => [field.name, field.input])));
		fieldsTexts.set(plan, text);
	}
	return text;
}
