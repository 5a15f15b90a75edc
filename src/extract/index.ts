/**
 * Local extraction (`extract:`): fields compiled once per job, read from each page parsed once.
 *
 * Map: field-spec (the job file's shape and names) → compile-fields (selectors and regexes compiled,
 * problems per key) → parse-html (one htmlparser2 tree per page, `extractLinks` from the same tree;
 * `streamLinks` when only the links are read)
 * → extract-fields (css/regex/jsonld/meta, types) with parse-number and json-ld → extract-page (parse
 * + extract + drop); service-data reads service-side results; fill-stats counts fill rates.
 */

export {
	type BlockSignatures,
	DEFAULT_BLOCK_SIGNATURE_SET,
	DEFAULT_BLOCK_SIGNATURES,
	type DefaultBlockSignature,
	matchCssSignature,
	matchTextSignature,
	NO_BLOCK_SIGNATURES,
} from "./block-signatures.js";
export {
	type CompiledField,
	compileField,
	compileFields,
	type ExtractPlan,
	type FieldProblem,
	fieldsTextOf,
	planOf,
} from "./compile-fields.js";
export { type ExtractedData, extractFields, MAX_LIST_ITEMS } from "./extract-fields.js";
export { extractPage } from "./extract-page.js";
export { brokenRule, FIELD_RULES, type FieldRule, type FieldRules, fieldRulesOf } from "./field-rules.js";
export {
	FIELD_TYPES,
	type FieldInput,
	type FieldType,
	type FieldValue,
	LOCATORS,
	type Locator,
} from "./field-spec.js";
export {
	createFillStats,
	type ExtractSummary,
	type FieldFill,
	type FillField,
	type FillStats,
	isFilled,
} from "./fill-stats.js";
export { decodeHtml, htmlEncodingOf } from "./html-charset.js";
export {
	createPagePool,
	DEFAULT_PAGE_TIMEOUT_MS,
	defaultPageThreads,
	type PagePool,
	type PagePoolOptions,
	PageTooComplexError,
} from "./page-pool.js";
export type { PageTask, PageTaskResult } from "./page-task.js";
export {
	collapseWhitespace,
	elementText,
	extractLinks,
	MAX_LINK_CHARS,
	MAX_PAGE_LINKS,
	type ParsedPage,
	parseHtml,
	resolveUrl,
	streamLinks,
} from "./parse-html.js";
export { parseNumber } from "./parse-number.js";
export { type CompiledSelector, compileCss, selectEvery, selectFirst } from "./select.js";
export { AI_DATA_KEY, serviceColumns, serviceData } from "./service-data.js";
