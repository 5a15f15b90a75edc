import { z } from "zod";
import {
	type BlockSignatures,
	compileCss,
	DEFAULT_BLOCK_SIGNATURE_SET,
	DEFAULT_BLOCK_SIGNATURES,
} from "../extract/index.js";
import { describeValue } from "./problems.js";

const ENTRY_RULE = 'must be a text to find, {text: "…"} or {css: "…"}';

const cssSchema = z
	.string()
	.min(1)
	.superRefine((css, ctx) => {
		try {
			compileCss(css);
		} catch (error) {
			ctx.addIssue({
				code: "custom",
				message: `is not a CSS selector: ${error instanceof Error ? error.message : String(error)}`,
			});
		}
	})
	.describe("A CSS selector: the page is blocked when an element matches it");

const entrySchema = z.union(
	[
		z.string().min(1).describe("Text to find in the page's HTML (case-insensitive)"),
		z.strictObject({ text: z.string().min(1).describe("Text to find in the page's HTML (case-insensitive)") }),
		z.strictObject({ css: cssSchema }),
	],
	{ error: (issue) => `${ENTRY_RULE} (got ${describeEntry(issue.input)})` },
);

/**
 * A refused entry as written when it is a small mapping (`{text: 5}`, `{css: null}`): "a mapping" alone would
 * not say what is wrong with a mapping the rule allows.
 */
function describeEntry(input: unknown): string {
	// A number as YAML wrote it (.inf is no JSON number: it would read "null").
	const scalar = (value: unknown) =>
		typeof value === "number" || typeof value === "boolean" ? String(value) : describeValue(value);
	if (input === null || typeof input !== "object" || Array.isArray(input)) return scalar(input);
	const entries = Object.entries(input);
	if (entries.length === 0 || entries.length > 3) return describeValue(input);
	return `{${entries.map(([key, value]) => `${key}: ${scalar(value)}`).join(", ")}}`;
}

/** `block_signatures:` (docs/behaviour.md, "Useful records"). */
export const blockSignaturesSchema = z
	.array(entrySchema)
	.describe(
		`What marks a page as a block page or interstitial (its record is then not useful): texts to find, {text: "…"}, or {css: "…"}. Default: ${DEFAULT_BLOCK_SIGNATURES.length} texts of common captcha, JavaScript-check and access-denied pages; [] turns them off`,
	);

export type BlockSignaturesInput = z.output<typeof blockSignaturesSchema>;

/** The job's signatures, split by kind: the default set when the job sets none. */
export function normalizeBlockSignatures(entries: BlockSignaturesInput | undefined): BlockSignatures {
	if (entries === undefined) return DEFAULT_BLOCK_SIGNATURE_SET;
	const text: string[] = [];
	const css: string[] = [];
	for (const entry of entries) {
		if (typeof entry === "string") text.push(entry);
		else if ("text" in entry) text.push(entry.text);
		else css.push(entry.css);
	}
	return { text, css };
}
