// The qrcode package's error-correction table: how many of a symbol's codewords are EC codewords
// (locate.ts judges a re-encoded client code against what EC could have corrected).
declare module 'qrcode/lib/core/error-correction-code.js' {
  export function getTotalCodewordsCount(version: number, errorCorrectionLevel: { bit: number }): number;
  export function getBlocksCount(version: number, errorCorrectionLevel: { bit: number }): number;
}
