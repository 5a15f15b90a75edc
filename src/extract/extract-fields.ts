import type { Element } from "domhandler";
import type { UserRegexMatch } from "../common/index.js";
import type { CompiledField, ExtractPlan } from "./compile-fields.js";
import type { FieldValue } from "./field-spec.js";
import { domutils } from "./html-libraries.js";
import { findJsonLd, jsonLdOf } from "./json-ld.js";
import { collapseWhitespace, elementText, type ParsedPage, resolveUrl } from "./parse-html.js";
import { parseNumber } from "./parse-number.js";
import { selectEvery, selectFirst } from "./select.js";

/** Extracted data of one page: every field of the plan, in declared order; not found = null. */
export type ExtractedData = Record<string, FieldValue>;

/** A raw string converted per the field's type; null when it cannot be (a price with no digits). */
function convert(raw: string, field: CompiledField, page: ParsedPage): string | number | null {
	switch (field.type) {
		case "text":
		case "html":
			return raw;
		case "number":
			return parseNumber(raw);
		case "integer": {
			const value = parseNumber(raw);
			return value === null ? null : Math.trunc(value);
		}
		case "url":
			return resolveUrl(raw, page.url);
		default: {
			const unreachable: never = field.type;
			throw new Error(`unknown type ${String(unreachable)}`);
		}
	}
}

/**
 * Items an `all: true` list keeps (the first ones, in document order): a page of a million matches would
 * otherwise carry them all to the run's thread, into the record and the job's store (`regex: a` over a
 * 6 MB page peaked at ~860 MB).
 */
export const MAX_LIST_ITEMS = 10_000;

/**
 * One item of an `all: true` list. Every match keeps its place, an empty one (no text, `href=""`, a
 * missing attribute, a number with no digits) as "", so lists read from the same rows stay aligned.
 */
function listItem(raw: string | null, field: CompiledField, page: ParsedPage): string | number {
	if (raw === null || raw === "") return "";
	return convert(raw, field, page) ?? "";
}

function elementValue(element: Element, field: Extract<CompiledField, { locator: "css" }>): string | null {
	if (field.attr !== null) {
		const value = element.attribs[field.attr];
		return value === undefined ? null : value;
	}
	// html: the element's outer HTML (the element itself with its markup), as it was parsed.
	return field.type === "html" ? domutils().getOuterHTML(element, { encodeEntities: "utf8" }) : elementText(element);
}

function cssValue(field: Extract<CompiledField, { locator: "css" }>, page: ParsedPage): FieldValue {
	if (!field.all) {
		const element = selectFirst(field.selector, page.document);
		if (!element) return null;
		const raw = elementValue(element, field);
		return raw === null ? null : convert(raw, field, page);
	}
	const values: Array<string | number> = [];
	for (const element of selectEvery(field.selector, page.document)) {
		values.push(listItem(elementValue(element, field), field, page));
		if (values.length === MAX_LIST_ITEMS) break;
	}
	return values.length > 0 ? values : null;
}

/**
 * The first capture group, or the whole match when the pattern has none. A group that took no part in
 * the match (`price: (\d+)?` before no digits) found nothing: null (or "" in a list), never the whole match.
 */
function regexCapture(match: UserRegexMatch): string | null {
	return match.length > 1 ? (match[1] ?? null) : match[0];
}

function regexValue(field: Extract<CompiledField, { locator: "regex" }>, page: ParsedPage): FieldValue {
	if (!field.all) {
		const match = field.regex.exec(page.html);
		const raw = match ? regexCapture(match) : null;
		return raw === null ? null : convert(raw, field, page);
	}
	const values: Array<string | number> = [];
	for (const match of field.regex.matchAll(page.html)) {
		values.push(listItem(regexCapture(match), field, page));
		if (values.length === MAX_LIST_ITEMS) break;
	}
	return values.length > 0 ? values : null;
}

function jsonLdValue(field: Extract<CompiledField, { locator: "jsonld" }>, page: ParsedPage): FieldValue {
	const found = findJsonLd(jsonLdOf(page), field.path);
	if (found === undefined || found === null) return null;
	if (typeof found === "number")
		return field.type === "integer" ? Math.trunc(found) : field.type === "text" ? String(found) : found;
	if (typeof found === "string") return convert(found, field, page);
	if (typeof found === "boolean") return convert(String(found), field, page);
	// An object or a list where a value was expected: its JSON, so nothing is lost.
	return field.type === "text" ? JSON.stringify(found) : null;
}

function metaValue(field: Extract<CompiledField, { locator: "meta" }>, page: ParsedPage): FieldValue {
	const element = selectFirst(field.selector, page.document);
	const content = element?.attribs.content;
	return content === undefined ? null : convert(collapseWhitespace(content), field, page);
}

function fieldValue(field: CompiledField, page: ParsedPage): FieldValue {
	switch (field.locator) {
		case "css":
			return cssValue(field, page);
		case "regex":
			return regexValue(field, page);
		case "jsonld":
			return jsonLdValue(field, page);
		case "meta":
			return metaValue(field, page);
		default: {
			const unreachable: never = field;
			throw new Error(`unknown locator ${JSON.stringify(unreachable)}`);
		}
	}
}

/**
 * Every field of `plan` read from one parsed page. A field that finds nothing (or an empty
 * string, or a number with no digits) is null. Regex fields run over the raw HTML.
 */
export function extractFields(page: ParsedPage, plan: ExtractPlan): ExtractedData {
	const data: ExtractedData = {};
	for (const field of plan.fields) {
		const value = fieldValue(field, page);
		data[field.name] = value === "" ? null : value;
	}
	return data;
}
