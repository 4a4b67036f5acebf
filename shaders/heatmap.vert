#version 330 core
// ImGui's vertex layout (imgui_impl_opengl3 binds the same locations): the heatmap is an
// ImGui image quad, so positions are in ImGui display coordinates.
layout (location = 0) in vec2 Position;
layout (location = 1) in vec2 UV;
layout (location = 2) in vec4 Color;

uniform mat4 projection;

out vec2 frag_uv;

void main() {
  frag_uv = UV;
  gl_Position = projection * vec4(Position, 0.0, 1.0);
}
