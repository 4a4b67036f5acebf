# Turns each shader file into `static const char* kShader_<name>_<ext> = R"(...)";`
# so the app runs from any directory. Called at build time; output in the build tree.
separate_arguments(SHADER_LIST UNIX_COMMAND "${SHADERS}")
set(content "// Generated from shaders/ by scripts/embed_shaders.cmake. Do not edit.\n")
foreach(shader ${SHADER_LIST})
  get_filename_component(name ${shader} NAME_WE)
  get_filename_component(ext ${shader} LAST_EXT)
  string(SUBSTRING ${ext} 1 -1 ext)
  file(READ ${shader} source)
  string(APPEND content "static const char* kShader_${name}_${ext} = R\"attnscope_glsl(${source})attnscope_glsl\";\n")
endforeach()
file(WRITE ${OUT}.tmp "${content}")
file(RENAME ${OUT}.tmp ${OUT})
