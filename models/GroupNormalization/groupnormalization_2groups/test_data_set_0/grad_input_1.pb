B
grad_scaleJf¿)AÓ¿Ù7ê>›…	¿