# ringrpc_generate(): ringrpc's stubs (X.ringrpc.pb.h/.cc) for .proto files,
# added to a target, in the shape of protobuf_generate():
#
#   ringrpc_generate(TARGET <target>
#                    PROTOS <file.proto>...
#                    [IMPORT_DIRS <dir>...]
#                    [PROTOC_OUT_DIR <dir>]          # default: CMAKE_CURRENT_BINARY_DIR
#                    [NESTED_NAMESPACE <name>]       # stubs in <package>::<name>
#                    [GENERATE_MOCKS])               # also X_mock.ringrpc.pb.h (gMock)
#
# Each proto's output path is its path under the first IMPORT_DIRS entry
# that holds it (or its bare name when IMPORT_DIRS is not given), exactly
# as protobuf_generate() places X.pb.h: generate the messages with
# protobuf_generate() (or grpc++'s build) using the same IMPORT_DIRS, and
# link them to <target>; the stubs include "X.pb.h" by that path.
# PROTOC_OUT_DIR is added to <target>'s include directories. With
# GENERATE_MOCKS, X_mock.ringrpc.pb.h (Mock<Service>Stub) is written beside
# the stubs; a test that includes it links GTest::gmock.
function(ringrpc_generate)
  cmake_parse_arguments(arg "GENERATE_MOCKS" "TARGET;PROTOC_OUT_DIR;NESTED_NAMESPACE" "PROTOS;IMPORT_DIRS" ${ARGN})
  if(NOT arg_TARGET)
    message(FATAL_ERROR "ringrpc_generate: TARGET is required")
  endif()
  if(NOT arg_PROTOS)
    message(FATAL_ERROR "ringrpc_generate(TARGET ${arg_TARGET}): PROTOS is empty")
  endif()
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "ringrpc_generate: unknown arguments: ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT arg_PROTOC_OUT_DIR)
    set(arg_PROTOC_OUT_DIR "${CMAKE_CURRENT_BINARY_DIR}")
  endif()
  set(options "")
  if(arg_NESTED_NAMESPACE)
    list(APPEND options "nested_namespace=${arg_NESTED_NAMESPACE}")
  endif()
  if(arg_GENERATE_MOCKS)
    list(APPEND options "generate_mock_code=true")
  endif()
  set(out_option "")
  if(options)
    string(REPLACE ";" "," out_option "${options}")
    set(out_option "${out_option}:")
  endif()

  set(include_flags "")
  foreach(dir IN LISTS arg_IMPORT_DIRS)
    get_filename_component(abs_dir "${dir}" ABSOLUTE)
    list(APPEND include_flags "-I${abs_dir}")
  endforeach()

  set(outputs "")
  foreach(proto IN LISTS arg_PROTOS)
    get_filename_component(abs_proto "${proto}" ABSOLUTE)
    get_filename_component(proto_dir "${abs_proto}" DIRECTORY)
    set(rel "")
    foreach(dir IN LISTS arg_IMPORT_DIRS)
      get_filename_component(abs_dir "${dir}" ABSOLUTE)
      file(RELATIVE_PATH candidate "${abs_dir}" "${abs_proto}")
      if(NOT candidate MATCHES "^\\.\\./")
        set(rel "${candidate}")
        break()
      endif()
    endforeach()
    set(proto_flags ${include_flags})
    if(rel STREQUAL "")
      if(arg_IMPORT_DIRS)
        message(FATAL_ERROR "ringrpc_generate: ${proto} is under none of IMPORT_DIRS (${arg_IMPORT_DIRS})")
      endif()
      get_filename_component(rel "${abs_proto}" NAME)
      list(APPEND proto_flags "-I${proto_dir}")
    endif()
    string(REGEX REPLACE "\\.proto$" "" base "${rel}")
    set(h "${arg_PROTOC_OUT_DIR}/${base}.ringrpc.pb.h")
    set(cc "${arg_PROTOC_OUT_DIR}/${base}.ringrpc.pb.cc")
    set(mock "")
    if(arg_GENERATE_MOCKS)
      set(mock "${arg_PROTOC_OUT_DIR}/${base}_mock.ringrpc.pb.h")
    endif()
    add_custom_command(
      OUTPUT "${h}" "${cc}" ${mock}
      COMMAND ${CMAKE_COMMAND} -E make_directory "${arg_PROTOC_OUT_DIR}"
      COMMAND protobuf::protoc
        "--plugin=protoc-gen-ringrpc=$<TARGET_FILE:ringrpc::protoc-gen-ringrpc>"
        "--ringrpc_out=${out_option}${arg_PROTOC_OUT_DIR}"
        ${proto_flags} "${abs_proto}"
      DEPENDS "${abs_proto}" protobuf::protoc ringrpc::protoc-gen-ringrpc
      COMMENT "ringrpc stubs for ${proto}"
      VERBATIM)
    list(APPEND outputs "${h}" "${cc}" ${mock})
  endforeach()
  target_sources(${arg_TARGET} PRIVATE ${outputs})
  target_include_directories(${arg_TARGET} PUBLIC "$<BUILD_INTERFACE:${arg_PROTOC_OUT_DIR}>")
  target_link_libraries(${arg_TARGET} PUBLIC ringrpc::client)
endfunction()
