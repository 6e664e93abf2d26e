B
grad_scaleJU°Xùfã?e~›¥,ù¿üx[r5ñ¿