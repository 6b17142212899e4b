// Java ZXing (the original library, Debian's libzxing-core-java) as a referee for the scan bench.
// Run by the JDK's source launcher: java -cp /usr/share/java/core.jar ZxingJavaReferee.java
//
// It decodes as ZXing's own command-line runner (javase's CommandLineRunner) does: the hybrid
// binarizer, the multi-format reader, no character-set hint (ZXing guesses, as a phone app using
// it does), once with the default hints and once with TRY_HARDER.
//
// Protocol, one image at a time: stdin gets a line "width height", then width*height bytes of
// luminance; stdout answers one line "<default> <tryHarder>", each the Base64 of the UTF-8 text
// read, or "-" when nothing was read.
import com.google.zxing.BarcodeFormat;
import com.google.zxing.BinaryBitmap;
import com.google.zxing.DecodeHintType;
import com.google.zxing.MultiFormatReader;
import com.google.zxing.PlanarYUVLuminanceSource;
import com.google.zxing.ReaderException;
import com.google.zxing.common.HybridBinarizer;
import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

public class ZxingJavaReferee {
  private static Map<DecodeHintType, Object> hints(boolean tryHarder) {
    Map<DecodeHintType, Object> hints = new EnumMap<>(DecodeHintType.class);
    hints.put(DecodeHintType.POSSIBLE_FORMATS, List.of(BarcodeFormat.QR_CODE));
    if (tryHarder) hints.put(DecodeHintType.TRY_HARDER, Boolean.TRUE);
    return hints;
  }

  private static String read(byte[] luminance, int width, int height, Map<DecodeHintType, Object> hints) {
    PlanarYUVLuminanceSource source = new PlanarYUVLuminanceSource(luminance, width, height, 0, 0, width, height, false);
    try {
      String text = new MultiFormatReader().decode(new BinaryBitmap(new HybridBinarizer(source)), hints).getText();
      return Base64.getEncoder().encodeToString(text.getBytes(StandardCharsets.UTF_8));
    } catch (ReaderException notRead) {
      return "-";
    }
  }

  private static String line(DataInputStream in) throws IOException {
    StringBuilder out = new StringBuilder();
    for (int c = in.read(); c != '\n'; c = in.read()) {
      if (c < 0) throw new EOFException();
      out.append((char) c);
    }
    return out.toString();
  }

  public static void main(String[] args) throws IOException {
    DataInputStream in = new DataInputStream(new BufferedInputStream(System.in, 1 << 20));
    PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    Map<DecodeHintType, Object> plain = hints(false);
    Map<DecodeHintType, Object> harder = hints(true);
    while (true) {
      String head;
      try {
        head = line(in);
      } catch (EOFException end) {
        return;
      }
      String[] size = head.trim().split(" ");
      int width = Integer.parseInt(size[0]);
      int height = Integer.parseInt(size[1]);
      byte[] luminance = new byte[width * height];
      in.readFully(luminance);
      out.println(read(luminance, width, height, plain) + " " + read(luminance, width, height, harder));
    }
  }
}
