import { lazyModule } from "../common/index.js";

/** The HTML libraries, loaded on the first page parsed or selector compiled (see `lazyModule`). */
export const cssSelect = lazyModule<typeof import("css-select")>("css-select");
export const htmlparser2 = lazyModule<typeof import("htmlparser2")>("htmlparser2");
export const domutils = lazyModule<typeof import("domutils")>("domutils");
