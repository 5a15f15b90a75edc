export { fleetUrlSecrets } from "../fleet/index.js";
