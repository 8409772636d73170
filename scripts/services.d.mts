// Types for scripts/services.mjs, which plain `node` runs before the suite (no TypeScript there).
export declare function findRedisServer(root?: string): string | null;
export declare function findChromium(root?: string): string | null;
export declare function findPostgresBin(root?: string): string | null;
export declare function findNginx(root?: string): string | null;
export declare function findMariadb(root?: string): string | null;
export interface Service {
  name: string;
  debianPackage: string;
  find(root?: string): string | null;
}
export declare const SERVICES: readonly Service[];
export declare function installCommand(packages: string[], asRoot: boolean): string;
export declare function ensureServices(options?: { root?: string; aptGet?: string; dryRun?: boolean; isRoot?: boolean }): number;
