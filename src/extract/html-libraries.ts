import { lazyModule } from "../shared/index.js";

/** htmlparser2 and domutils, loaded on the first page parsed (see `lazyModule`). */
export const htmlparser2 = lazyModule<typeof import("htmlparser2")>("htmlparser2");
export const domutils = lazyModule<typeof import("domutils")>("domutils");
