BscalesJ=
×?\Â?