import { createRequire } from "node:module";

const require = createRequire(import.meta.url);

/**
 * Packages that the CLI's bundle carries inside itself, each loaded when first asked for like any
 * other here: scripts/bundle-cli.mjs provides this table (esbuild's `inject`). Undefined in tsc's
 * build (the library, the tests), where every package comes from node_modules.
 */
declare const SCRAPEJOB_BUNDLED_MODULES: Readonly<Record<string, () => unknown>> | undefined;

const bundled = typeof SCRAPEJOB_BUNDLED_MODULES === "undefined" ? undefined : SCRAPEJOB_BUNDLED_MODULES;

/**
 * A package loaded on first use, through its CommonJS build so that its API stays synchronous. For
 * the libraries only some runs need (HTML parsing and CSS selectors, public-suffix domains): a plain
 * list run never parses a page, and loading them would cost it ~4 MB of resident memory and ~2 MB
 * of heap for nothing.
 */
export function lazyModule<T>(name: string): () => T {
	let loaded: T | undefined;
	return () => {
		loaded ??= (bundled?.[name]?.() ?? require(name)) as T;
		return loaded;
	};
}
