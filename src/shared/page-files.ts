/**
 * The name prefix of a page body written to `pages/` as it arrives (`api` streams it there), until its
 * record names it (`output` renames it into place). A name with it that no record names is a leftover
 * of a killed run: the next run removes it.
 */
export const PARTIAL_PAGE_PREFIX = ".partial-";
