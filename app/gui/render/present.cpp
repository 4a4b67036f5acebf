// GLX_MESA_copy_sub_buffer, apart from glad: <GL/glx.h> brings in the system GL header.
#include <GL/glx.h>
#include <GL/glxext.h>
#include <GLFW/glfw3.h>

#include "gui/render/redraw.h"

namespace attnscope {
namespace {

PFNGLXCOPYSUBBUFFERMESAPROC copySubBuffer() {
  return reinterpret_cast<PFNGLXCOPYSUBBUFFERMESAPROC>(glfwGetProcAddress("glXCopySubBufferMESA"));
}

}  // namespace

bool canPresentByCopy() {
  return glXGetCurrentDisplay() && glXGetCurrentDrawable() && glfwExtensionSupported("GLX_MESA_copy_sub_buffer") &&
         copySubBuffer();
}

void presentByCopy(const PixelBox& box, int height) {
  // GLX counts rows from the bottom, like glReadPixels.
  copySubBuffer()(glXGetCurrentDisplay(), glXGetCurrentDrawable(), box.x0, height - box.y1, box.x1 - box.x0,
                  box.y1 - box.y0);
}

}  // namespace attnscope
