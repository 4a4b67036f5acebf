// PNG and PDF through Cairo: real font rendering, cells on whole pixels.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <stdexcept>

#include <cairo-pdf.h>
#include <cairo.h>

#include "layout.h"

namespace attnscope {
namespace {

using figure_detail::Anchor;
using figure_detail::Layout;
using figure_detail::TextItem;
using SurfacePtr = std::unique_ptr<cairo_surface_t, void (*)(cairo_surface_t*)>;
using ContextPtr = std::unique_ptr<cairo_t, void (*)(cairo_t*)>;

// PDFs list matrices up to this many cells as one vector rect each; larger ones embed
// the matrix as an image with nearest-neighbour scaling (one image pixel per cell).
constexpr int64_t kMaxPdfRectCells = 65536;

cairo_status_t appendToString(void* closure, const unsigned char* data, unsigned int length) {
  static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), length);
  return CAIRO_STATUS_SUCCESS;
}

void checkStatus(cairo_status_t status, const char* what) {
  if (status != CAIRO_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(what) + ": " + cairo_status_to_string(status));
  }
}

void setColor(cairo_t* cr, const Rgb& color) {
  cairo_set_source_rgb(cr, color[0] / 255.0, color[1] / 255.0, color[2] / 255.0);
}

uint32_t pixelOf(const Rgb& color) {  // CAIRO_FORMAT_RGB24: 0x00RRGGBB in native order
  return (uint32_t{color[0]} << 16) | (uint32_t{color[1]} << 8) | color[2];
}

void drawText(cairo_t* cr, const TextItem& item) {
  cairo_select_font_face(cr, item.font.c_str(), CAIRO_FONT_SLANT_NORMAL,
                         item.bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, item.size);
  cairo_text_extents_t extents;
  cairo_text_extents(cr, item.text.c_str(), &extents);
  const double offset = item.anchor == Anchor::Start    ? 0.0
                        : item.anchor == Anchor::Middle ? -extents.x_advance / 2
                                                        : -extents.x_advance;
  cairo_save(cr);
  cairo_translate(cr, item.x, item.y);
  if (item.vertical) cairo_rotate(cr, -M_PI / 2);
  cairo_move_to(cr, offset, 0);
  setColor(cr, item.color);
  cairo_show_text(cr, item.text.c_str());
  cairo_restore(cr);
}

// Background, colour bar, ticks and text: everything except the cells.
void drawFrame(cairo_t* cr, const Layout& layout) {
  setColor(cr, figure_detail::kBackground);
  cairo_paint(cr);
  cairo_set_antialias(cr, CAIRO_ANTIALIAS_NONE);
  for (const auto& rect : layout.colorbar) {
    setColor(cr, rect.color);
    cairo_rectangle(cr, rect.x, rect.y, rect.w, rect.h);
    cairo_fill(cr);
  }
  cairo_set_antialias(cr, CAIRO_ANTIALIAS_DEFAULT);
  cairo_set_line_cap(cr, CAIRO_LINE_CAP_SQUARE);
  for (const auto& line : layout.lines) {
    setColor(cr, line.color);
    cairo_set_line_width(cr, line.width);
    cairo_move_to(cr, line.x0, line.y0);
    cairo_line_to(cr, line.x1, line.y1);
    cairo_stroke(cr);
  }
  figure_detail::setFigureFontOptions(cr);
  for (const auto& text : layout.texts) drawText(cr, text);
}

// Writes one panel's cells straight into an RGB24 image at (x0, y0): exactly the table
// entry, and fast for large matrices.
void fillPanelPixels(cairo_surface_t* surface, const Figure& figure, const FigurePanel& panel, int x0,
                     int y0, int cell) {
  cairo_surface_flush(surface);
  unsigned char* data = cairo_image_surface_get_data(surface);
  const size_t stride = static_cast<size_t>(cairo_image_surface_get_stride(surface));
  const size_t row_bytes = static_cast<size_t>(figure.cols * cell) * 4;
  for (int64_t r = 0; r < figure.rows; ++r) {
    const size_t y = static_cast<size_t>(y0 + r * cell);
    auto* first_row = reinterpret_cast<uint32_t*>(data + y * stride) + x0;
    for (int64_t c = 0; c < figure.cols; ++c) {
      std::fill(first_row + c * cell, first_row + (c + 1) * cell, pixelOf(cellColor(figure, panel, r, c)));
    }
    for (int dy = 1; dy < cell; ++dy) std::memcpy(data + (y + dy) * stride + x0 * 4, first_row, row_bytes);
  }
  cairo_surface_mark_dirty(surface);
}

void drawCellRects(cairo_t* cr, const Figure& figure, const Layout& layout) {
  cairo_set_antialias(cr, CAIRO_ANTIALIAS_NONE);
  const double cell = layout.cell_px;
  for (size_t p = 0; p < figure.panels.size(); ++p) {
    for (int64_t r = 0; r < figure.rows; ++r) {
      for (int64_t c = 0; c < figure.cols; ++c) {
        setColor(cr, cellColor(figure, figure.panels[p], r, c));
        cairo_rectangle(cr, layout.panel_x[p] + c * cell, layout.panel_y[p] + r * cell, cell, cell);
        cairo_fill(cr);
      }
    }
  }
}

void drawCellImages(cairo_t* cr, const Figure& figure, const Layout& layout) {
  for (size_t p = 0; p < figure.panels.size(); ++p) {
    SurfacePtr image(cairo_image_surface_create(CAIRO_FORMAT_RGB24, static_cast<int>(figure.cols),
                                                static_cast<int>(figure.rows)),
                     cairo_surface_destroy);
    checkStatus(cairo_surface_status(image.get()), "PDF figure");
    fillPanelPixels(image.get(), figure, figure.panels[p], 0, 0, 1);
    cairo_save(cr);
    cairo_translate(cr, layout.panel_x[p], layout.panel_y[p]);
    cairo_scale(cr, layout.cell_px, layout.cell_px);
    cairo_set_source_surface(cr, image.get(), 0, 0);
    cairo_pattern_set_filter(cairo_get_source(cr), CAIRO_FILTER_NEAREST);
    cairo_rectangle(cr, 0, 0, static_cast<double>(figure.cols), static_cast<double>(figure.rows));
    cairo_fill(cr);
    cairo_restore(cr);
  }
}

// Feeds a PNG held in memory to cairo's stream reader.
struct PngReader {
  const std::string& bytes;
  size_t offset = 0;
};

cairo_status_t readFromString(void* closure, unsigned char* data, unsigned int length) {
  auto* reader = static_cast<PngReader*>(closure);
  if (reader->bytes.size() - reader->offset < length) return CAIRO_STATUS_READ_ERROR;
  std::memcpy(data, reader->bytes.data() + reader->offset, length);
  reader->offset += length;
  return CAIRO_STATUS_SUCCESS;
}

}  // namespace

RgbImage decodePng(const std::string& png_bytes) {
  PngReader reader{png_bytes};
  SurfacePtr surface(cairo_image_surface_create_from_png_stream(readFromString, &reader), cairo_surface_destroy);
  if (cairo_surface_status(surface.get()) != CAIRO_STATUS_SUCCESS) {
    throw InputError(std::string("PNG: cannot decode (") + cairo_status_to_string(cairo_surface_status(surface.get())) + ")");
  }
  cairo_surface_flush(surface.get());
  RgbImage image;
  image.width = cairo_image_surface_get_width(surface.get());
  image.height = cairo_image_surface_get_height(surface.get());
  const unsigned char* data = cairo_image_surface_get_data(surface.get());
  const int stride = cairo_image_surface_get_stride(surface.get());
  image.pixels.reserve(static_cast<size_t>(image.width) * image.height);
  for (int y = 0; y < image.height; ++y) {
    const auto* row = reinterpret_cast<const uint32_t*>(data + static_cast<size_t>(y) * stride);
    for (int x = 0; x < image.width; ++x) {
      const uint32_t p = row[x];  // (A)RGB32, premultiplied; figures are opaque
      image.pixels.push_back({static_cast<uint8_t>(p >> 16), static_cast<uint8_t>(p >> 8), static_cast<uint8_t>(p)});
    }
  }
  return image;
}

std::string encodePng(const RgbImage& image) {
  SurfacePtr surface(cairo_image_surface_create(CAIRO_FORMAT_RGB24, image.width, image.height), cairo_surface_destroy);
  checkStatus(cairo_surface_status(surface.get()), "PNG image");
  cairo_surface_flush(surface.get());
  unsigned char* data = cairo_image_surface_get_data(surface.get());
  const size_t stride = static_cast<size_t>(cairo_image_surface_get_stride(surface.get()));
  for (int y = 0; y < image.height; ++y) {
    auto* row = reinterpret_cast<uint32_t*>(data + y * stride);
    for (int x = 0; x < image.width; ++x) row[x] = pixelOf(image.at(x, y));
  }
  cairo_surface_mark_dirty(surface.get());
  std::string png;
  checkStatus(cairo_surface_write_to_png_stream(surface.get(), appendToString, &png), "PNG encoding");
  return png;
}

std::string renderFigurePng(const Figure& figure) {
  const Layout layout = figure_detail::layoutFigure(figure);
  SurfacePtr surface(cairo_image_surface_create(CAIRO_FORMAT_RGB24, layout.width, layout.height),
                     cairo_surface_destroy);
  checkStatus(cairo_surface_status(surface.get()), "PNG figure");
  {
    ContextPtr cr(cairo_create(surface.get()), cairo_destroy);
    drawFrame(cr.get(), layout);
    checkStatus(cairo_status(cr.get()), "PNG figure");
  }
  for (size_t p = 0; p < figure.panels.size(); ++p) {
    fillPanelPixels(surface.get(), figure, figure.panels[p], layout.panel_x[p], layout.panel_y[p], layout.cell_px);
  }
  std::string png;
  checkStatus(cairo_surface_write_to_png_stream(surface.get(), appendToString, &png), "PNG encoding");
  return png;
}

std::string renderFigurePdf(const Figure& figure) {
  const Layout layout = figure_detail::layoutFigure(figure);
  std::string pdf;
  SurfacePtr surface(cairo_pdf_surface_create_for_stream(appendToString, &pdf, layout.width, layout.height),
                     cairo_surface_destroy);
  checkStatus(cairo_surface_status(surface.get()), "PDF figure");
  {
    ContextPtr cr(cairo_create(surface.get()), cairo_destroy);
    drawFrame(cr.get(), layout);
    if (figure.rows * figure.cols * static_cast<int64_t>(figure.panels.size()) <= kMaxPdfRectCells) {
      drawCellRects(cr.get(), figure, layout);
    } else {
      drawCellImages(cr.get(), figure, layout);
    }
    checkStatus(cairo_status(cr.get()), "PDF figure");
  }
  cairo_surface_finish(surface.get());
  checkStatus(cairo_surface_status(surface.get()), "PDF figure");
  return pdf;
}

}  // namespace attnscope
