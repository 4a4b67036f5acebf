// SVG written by hand: one <rect class="cell"> per cell, labels as editable <text>.
#include <cstdio>

#include "layout.h"

namespace attnscope {
namespace {

using figure_detail::Anchor;
using figure_detail::Layout;
using figure_detail::TextItem;

constexpr int64_t kMaxSvgCells = 1 << 20;

std::string hexColor(const Rgb& color) {
  char text[8];
  std::snprintf(text, sizeof text, "#%02x%02x%02x", color[0], color[1], color[2]);
  return text;
}

std::string num(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", v);
  std::string s = text;
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

void appendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// XML character data: markup escaped, and anything XML 1.0 forbids (control characters,
// invalid UTF-8, surrogates, U+FFFE/U+FFFF) replaced by U+FFFD so the file always parses.
std::string xmlText(const std::string& utf8) {
  std::string out;
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(utf8[k]); };
  for (size_t i = 0; i < utf8.size();) {
    const uint8_t lead = byte(i);
    const int extra = lead < 0x80             ? 0
                      : (lead & 0xE0) == 0xC0 ? 1
                      : (lead & 0xF0) == 0xE0 ? 2
                      : (lead & 0xF8) == 0xF0 ? 3
                                              : -1;
    uint32_t cp = 0xFFFD;
    size_t length = 1;
    if (extra == 0) {
      cp = lead;
    } else if (extra > 0 && i + extra < utf8.size()) {
      uint32_t value = lead & (0x3F >> extra);
      bool valid = true;
      for (int k = 1; valid && k <= extra; ++k) {
        valid = (byte(i + k) & 0xC0) == 0x80;
        value = (value << 6) | (byte(i + k) & 0x3F);
      }
      const uint32_t smallest[] = {0, 0x80, 0x800, 0x10000};
      if (valid && value >= smallest[extra] && value <= 0x10FFFF && !(value >= 0xD800 && value <= 0xDFFF)) {
        cp = value;
        length = 1 + extra;
      }
    }
    i += length;
    if ((cp < 0x20 && cp != '\t') || cp == 0xFFFE || cp == 0xFFFF) cp = 0xFFFD;
    switch (cp) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: appendUtf8(out, cp);
    }
  }
  return out;
}

std::string svgText(const TextItem& item) {
  std::string svg = "<text";
  if (item.vertical) {
    svg += " transform=\"translate(" + num(item.x) + " " + num(item.y) + ") rotate(-90)\"";
  } else {
    svg += " x=\"" + num(item.x) + "\" y=\"" + num(item.y) + "\"";
  }
  svg += " font-family=\"" + xmlText(item.font) + ", sans-serif\" font-size=\"" + num(item.size) + "\"";
  if (item.bold) svg += " font-weight=\"bold\"";
  if (item.anchor != Anchor::Start) {
    svg += std::string(" text-anchor=\"") + (item.anchor == Anchor::Middle ? "middle" : "end") + "\"";
  }
  svg += " fill=\"" + hexColor(item.color) + "\">" + xmlText(item.text) + "</text>\n";
  return svg;
}

}  // namespace

std::string renderFigureSvg(const Figure& figure) {
  const int64_t cells = figure.rows * figure.cols * static_cast<int64_t>(figure.panels.size());
  if (cells > kMaxSvgCells) {
    throw InputError("SVG: " + std::to_string(cells) + " cells is too many for one <rect> each (limit " +
                     std::to_string(kMaxSvgCells) + "); export png, pdf or npy instead");
  }
  const Layout layout = figure_detail::layoutFigure(figure);
  const std::string w = std::to_string(layout.width), h = std::to_string(layout.height);
  std::string svg = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  svg += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + w + "\" height=\"" + h +
         "\" viewBox=\"0 0 " + w + " " + h + "\">\n";
  svg += "<title>" + xmlText(figure.title) + "</title>\n";
  svg += "<rect class=\"background\" x=\"0\" y=\"0\" width=\"" + w + "\" height=\"" + h + "\" fill=\"" +
         hexColor(figure_detail::kBackground) + "\"/>\n";
  const std::string cell = std::to_string(layout.cell_px);
  for (size_t p = 0; p < figure.panels.size(); ++p) {
    svg += "<g class=\"matrix\" shape-rendering=\"crispEdges\">\n";
    for (int64_t r = 0; r < figure.rows; ++r) {
      const std::string y = std::to_string(layout.panel_y[p] + r * layout.cell_px);
      for (int64_t c = 0; c < figure.cols; ++c) {
        svg += "<rect class=\"cell\" x=\"" + std::to_string(layout.panel_x[p] + c * layout.cell_px) + "\" y=\"" + y +
               "\" width=\"" + cell + "\" height=\"" + cell + "\" fill=\"" +
               hexColor(cellColor(figure, figure.panels[p], r, c)) + "\"/>\n";
      }
    }
    svg += "</g>\n";
  }
  svg += "<g class=\"colorbar\" shape-rendering=\"crispEdges\">\n";
  for (const auto& band : layout.colorbar) {
    svg += "<rect x=\"" + num(band.x) + "\" y=\"" + num(band.y) + "\" width=\"" + num(band.w) + "\" height=\"" +
           num(band.h) + "\" fill=\"" + hexColor(band.color) + "\"/>\n";
  }
  svg += "</g>\n<g class=\"ticks\" stroke-linecap=\"square\">\n";
  for (const auto& line : layout.lines) {
    svg += "<line x1=\"" + num(line.x0) + "\" y1=\"" + num(line.y0) + "\" x2=\"" + num(line.x1) + "\" y2=\"" +
           num(line.y1) + "\" stroke=\"" + hexColor(line.color) + "\" stroke-width=\"" + num(line.width) + "\"/>\n";
  }
  svg += "</g>\n<g class=\"text\">\n";
  for (const TextItem& text : layout.texts) svg += svgText(text);
  svg += "</g>\n</svg>\n";
  return svg;
}

}  // namespace attnscope
