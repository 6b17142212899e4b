/**
 * Writing an output file the user named (`--out`): into a temporary file beside it, renamed into
 * place (write-file-atomic), so a full disk or a Ctrl-C leaves no half PNG and keeps the file
 * that was there. Not where renaming cannot work or would do harm: a device, a pipe or
 * /dev/stdout (a rename would replace the node itself), or a writable file in a folder this user
 * cannot write; those are written in place, as a plain write would.
 */
import { stat, writeFile } from 'node:fs/promises';
import writeFileAtomic from 'write-file-atomic';

export async function writeOutputFile(file: string, data: Uint8Array): Promise<void> {
  const existing = await stat(file).catch(() => null);
  if (existing && !existing.isFile()) return writeFile(file, data);
  try {
    // A Buffer view (not a copy), as the library's types ask.
    await writeFileAtomic(file, Buffer.from(data.buffer, data.byteOffset, data.byteLength));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // The folder refuses the temporary file; the file itself may still take the bytes.
    if (existing && (code === 'EACCES' || code === 'EPERM' || code === 'EROFS')) return writeFile(file, data);
    throw error;
  }
}
