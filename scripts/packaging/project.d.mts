// Types of project.mjs, for bench/packaging.ts.
export declare const root: string
export declare const PACKAGES: readonly string[]
export declare const npmEnv: NodeJS.ProcessEnv
export interface Tarball {
  file: string
  files: string[]
  size: number
  unpackedSize: number
}
export declare function run(
  cmd: string,
  args: string[],
  opts?: import('node:child_process').ExecFileOptions,
): Promise<{ stdout: string; stderr: string }>
export declare function manifest(dir: string): any
export declare function packAll(dest: string): Promise<Record<string, Tarball>>
export declare function installProject(dir: string, specs: string[], npmFlags?: string[]): Promise<void>
export declare function peerSpecs(): string[]
