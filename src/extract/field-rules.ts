import { compileUserRegex, type UserRegex } from "../common/index.js";
import type { FieldInput } from "./field-spec.js";

/** The contract rules of a field as a found value breaks them (`type` and `required` are read elsewhere). */
export const FIELD_RULES = ["pattern", "min", "max", "min_length"] as const;
export type FieldRule = (typeof FIELD_RULES)[number];

/** One field's contract rules, ready to check values with (compiled once per job). */
export interface FieldRules {
	readonly name: string;
	/** Matched in linear time (RE2): a value from a page must not be able to hang the run. */
	readonly pattern: UserRegex | null;
	readonly min: number | null;
	readonly max: number | null;
	readonly minLength: number | null;
}

/**
 * The contract rules a field declares, or null when it declares none. Validation compiled the same
 * pattern already (compile-fields.ts), so a job that reaches the runner has one that compiles.
 */
export function fieldRulesOf(name: string, input: FieldInput): FieldRules | null {
	if (typeof input === "string") return null;
	const { pattern, min, max, min_length: minLength } = input;
	if (pattern === undefined && min === undefined && max === undefined && minLength === undefined) return null;
	return {
		name,
		pattern: pattern === undefined ? null : compileUserRegex(pattern),
		min: min ?? null,
		max: max ?? null,
		minLength: minLength ?? null,
	};
}

/**
 * The first rule a found value breaks, or null. Nothing found (null, "", an empty list) breaks no rule
 * here: emptiness is what `required` and the fill checks judge. Each item of a list is checked.
 */
export function brokenRule(rules: FieldRules, value: unknown): FieldRule | null {
	if (Array.isArray(value)) {
		for (const item of value) {
			const broken = brokenRule(rules, item);
			if (broken !== null) return broken;
		}
		return null;
	}
	if (value === null || value === undefined || value === "") return null;
	if (typeof value === "number") {
		if (rules.min !== null && value < rules.min) return "min";
		if (rules.max !== null && value > rules.max) return "max";
	}
	const text = typeof value === "string" ? value : JSON.stringify(value);
	if (rules.minLength !== null && [...text].length < rules.minLength) return "min_length";
	if (rules.pattern !== null && !rules.pattern.test(text)) return "pattern";
	return null;
}
