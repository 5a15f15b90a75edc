/**
 * Extraction fields as the job file writes them (docs/guides/extraction.md),
 * and the names that hold them. One field = one locator (`css`, `regex`, `jsonld` or `meta`) and a `type`.
 */

export const FIELD_TYPES = ["text", "number", "integer", "url", "html"] as const;
export type FieldType = (typeof FIELD_TYPES)[number];

export const LOCATORS = ["css", "regex", "jsonld", "meta"] as const;
export type Locator = (typeof LOCATORS)[number];

/** One field as written: a string is shorthand for `{css: ...}`. */
export type FieldInput =
	| string
	| {
			css?: string;
			/** With `css`: read this attribute instead of the text. */
			attr?: string;
			/** Every match (a list) instead of the first. */
			all?: boolean;
			regex?: string;
			jsonld?: string;
			meta?: string;
			/** @default "text" */
			type?: FieldType;
			/** Counts for `extract_checks.min_fill`. */
			required?: boolean;
			/** Contract: a found value (each item of a list) must match this regular expression. */
			pattern?: string;
			/** Contract: a found number may not be below this (number and integer fields). */
			min?: number;
			/** Contract: a found number may not be above this (number and integer fields). */
			max?: number;
			/** Contract: a found value (each item of a list) has at least this many characters. */
			min_length?: number;
	  };

/** What a field found: one value, a list (`all: true`), or nothing. */
export type FieldValue = string | number | null | Array<string | number>;
