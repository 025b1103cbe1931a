/** crc-32 ships CRC32C as a CommonJS subpath without its own type declaration. */
declare module 'crc-32/crc32c.js' {
  const CRC32C: {
    /** signed 32-bit CRC32C of the bytes (`>>> 0` for the unsigned value) */
    buf(data: Uint8Array, seed?: number): number;
  };
  export = CRC32C;
}
