# The model zoo's sources, for the tandem_torch library (needs libtorch).
set(TANDEM_MODEL_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/bert_mini.cpp
  ${CMAKE_CURRENT_LIST_DIR}/image_task.cpp
  ${CMAKE_CURRENT_LIST_DIR}/lstm.cpp
  ${CMAKE_CURRENT_LIST_DIR}/mlp.cpp
  ${CMAKE_CURRENT_LIST_DIR}/mobilenetv2.cpp
  ${CMAKE_CURRENT_LIST_DIR}/model.cpp
  ${CMAKE_CURRENT_LIST_DIR}/optimizer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/resnet50.cpp
  ${CMAKE_CURRENT_LIST_DIR}/resnet_cifar.cpp
  ${CMAKE_CURRENT_LIST_DIR}/token_tasks.cpp
  ${CMAKE_CURRENT_LIST_DIR}/vgg16.cpp
  ${CMAKE_CURRENT_LIST_DIR}/zoo.cpp
)
